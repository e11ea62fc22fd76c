"""Issue 17, defects 3 and 4 (and seeded faults, 6): full ids and complete commands that act
on the same store; flags that exclude each other; only the actions the run allows; labels
that say what a person decided."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from keep_sdk.model import RunStatus
from tests.cli.terminal import ALL_GRANTS, DEMO, SAMPLE, keep

RUN_ID = re.compile(r"\brun_[0-9a-f]{32}\b")


def escalate(tmp_path: Path, store: str | None) -> str:
    """The demo with the chat post timing out (declared in the seed file): nobody can know
    whether it was posted, and slack.postMessage cannot reconcile."""
    seed = json.loads(SAMPLE.read_text())
    seed["faults"] = [
        {"connector": "slack", "operation": "postMessage", "kind": "timeout_before_effect"}
    ]
    seed_file = tmp_path / "seed.json"
    seed_file.write_text(json.dumps(seed))
    where = ("--store", store) if store else ()
    done = keep(
        "run", str(DEMO), *where, "--seed", str(seed_file), "--until-idle",
        "--isolation", "in-process", *ALL_GRANTS,
    )  # fmt: skip
    assert done.code == 0, done.err
    runs = json.loads(keep("runs", *where, "--json", "--status", "paused:reconciliation").out)
    [run] = runs
    return str(run["id"])


def suggested(status_text: str) -> list[str]:
    return [line.strip() for line in status_text.splitlines() if line.strip().startswith("keep ")]


def test_status_suggests_complete_commands_that_act_on_the_same_store(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'elsewhere' / 'keep.db'}"
    run_id = escalate(tmp_path, store)
    shown = keep("status", "--store", store)
    assert shown.code == 0, shown.err
    commands = suggested(shown.out)
    assert commands == [
        f"keep resolve {run_id} --happened --result JSON --store {store}",
        f"keep resolve {run_id} --didnt-happen --store {store}",
        f"keep resolve {run_id} --skip --store {store}",
    ]
    for listing in ("runs", "ledger"):
        text = keep(listing, "--store", store).out
        assert run_id in text
        assert "…" not in text
    assert all(len(m) == 36 for m in RUN_ID.findall(shown.out))
    skip = shlex.split(commands[2])
    done = keep(*skip[1:], "--isolation", "in-process")
    assert done.code == 0, done.err
    assert "is committed" in done.out
    ledger = keep("ledger", "--store", store).out
    assert "skipped by" in ledger
    assert "a person must" not in ledger
    assert "indeterminate" not in ledger


def test_commands_for_the_default_store_need_no_store_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run_id = escalate(tmp_path, None)
    assert suggested(keep("status").out) == [
        f"keep resolve {run_id} --happened --result JSON",
        f"keep resolve {run_id} --didnt-happen",
        f"keep resolve {run_id} --skip",
    ]


@pytest.mark.parametrize(
    "flags",
    [
        ("--retry", "--skip"),
        ("--skip", "--didnt-happen"),
        ("--retry", "--didnt-happen", "--skip"),
    ],
)
def test_flags_that_exclude_each_other_are_refused(tmp_path: Path, flags: tuple[str, ...]) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    run_id = escalate(tmp_path, store)
    done = keep("resolve", run_id, *flags, "--store", store, "--isolation", "in-process")
    assert done.code == 2
    assert "exclude each other" in done.err
    [run] = json.loads(keep("runs", "--store", store, "--json", "--limit", "1").out)
    assert run["status"] == RunStatus.PAUSED_RECONCILIATION.value


def test_after_didnt_happen_the_labels_say_what_was_decided(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    run_id = escalate(tmp_path, store)
    done = keep("resolve", run_id, "--didnt-happen", "--store", store, "--isolation", "in-process")
    assert done.code == 0, done.err
    runs = keep("runs", "--store", store).out
    block = runs[runs.index(run_id) :].split("\n\n")[0]
    assert f"{run_id}  resolved" in block
    assert "the change did not happen" in block
    assert "retried as run_" in block
    assert "said it did not happen" in keep("ledger", "--store", store).out
    assert "Nothing waits for you." in keep("status", "--store", store).out


def test_it_happened_with_the_result_the_person_gives(tmp_path: Path) -> None:
    """Issue 31: a mutation that cannot reconcile can be settled as happened, with a result."""
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    run_id = escalate(tmp_path, store)
    alone = keep("resolve", run_id, "--happened", "--store", store)
    assert alone.code == 2
    assert "--happened needs --result JSON" in alone.err
    bad = keep("resolve", run_id, "--happened", "--result", "{nope", "--store", store)
    assert bad.code == 2
    assert "is not JSON" in bad.err
    answer = tmp_path / "answer.json"
    answer.write_text('{"ts": "1700.42", "channel": "#finance"}')
    done = keep(
        "resolve", run_id, "--happened", "--result", f"@{answer}", "--store", store,
        "--isolation", "in-process",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert "is committed" in done.out
    entries = json.loads(keep("ledger", "--store", store, "--json").out)
    [entry] = [e for e in entries if e["runId"] == run_id]
    assert entry["status"] == "applied"
    assert entry["result"] == {"ts": "1700.42", "channel": "#finance"}
    ledger = keep("ledger", "--store", store).out
    assert 'happened, with result {"channel":"#finance","ts":"1700.42"}' in ledger
