"""Issue 17, defect 6: seeds merge (or replace with --seed-replace), are checked before
anything is deployed, and may declare faults for the built-in doubles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from keep_sdk.connectors.builtin import Sheets
from tests.cli.terminal import ALL_GRANTS, DEMO, SAMPLE, keep, run_demo


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document))
    return path


def sheets(tmp_path: Path) -> dict[str, Any]:
    spreadsheets: dict[str, Any] = Sheets(backing=tmp_path / "doubles.db").snapshot()[
        "spreadsheets"
    ]
    return spreadsheets


def test_seeding_merges_by_default_and_keeps_what_a_workflow_wrote(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    assert run_demo(store, *ALL_GRANTS).code == 0
    assert len(sheets(tmp_path)["invoices"]["rows"]) == 3
    other = write(
        tmp_path / "other.json",
        {"sheets": {"spreadsheets": {"budget": {"rows": [{"rowId": "b1", "values": [1]}]}}}},
    )
    done = keep(
        "run", str(DEMO), "--store", store, "--seed", str(other), "--until-idle",
        "--isolation", "in-process",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert sorted(sheets(tmp_path)) == ["budget", "invoices"]
    assert len(sheets(tmp_path)["invoices"]["rows"]) == 3
    again = run_demo(store)
    assert again.code == 0, again.err
    assert len(sheets(tmp_path)["invoices"]["rows"]) == 3
    replaced = keep(
        "run", str(DEMO), "--store", store, "--seed", str(other), "--seed-replace",
        "--until-idle", "--isolation", "in-process",
    )  # fmt: skip
    assert replaced.code == 0, replaced.err
    assert sorted(sheets(tmp_path)) == ["budget"]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"sheets": {"spreadsheets": {"invoices": {"rows": [{"values": [1]}]}}}}, "rowId"),
        ({"sheets": {"spreadsheets": {"invoices": {"row": []}}}} | {"sheets": []}, "sheets"),
        ({"gmail": {"messages": [{"id": "m1"}]}}, "gmail.messages.0"),
        ({"slack": {"channels": {"#x": [{"text": "hi"}]}}}, "ts"),
        ({"gmial": {"messages": []}}, "'gmial' is not a connector"),
        ({"faults": [{"connector": "slack", "kind": "crash_after_effect"}]}, "cannot be seeded"),
        ({"faults": [{"connector": "slack", "operation": "post", "kind": "failure"}]}, "post"),
        ({"faults": {"connector": "slack"}}, "faults"),
        (["not", "a", "mapping"], "must map connector names"),
    ],
)
def test_a_bad_seed_exits_2_and_deploys_nothing(
    tmp_path: Path, document: Any, message: str
) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    seed = write(tmp_path / "bad.json", document)
    done = keep(
        "run", str(DEMO), "--store", store, "--seed", str(seed), "--until-idle",
        "--isolation", "in-process", *ALL_GRANTS,
    )  # fmt: skip
    assert done.code == 2, (done.out, done.err)
    assert message in done.err
    assert "nothing was deployed" in done.err
    assert "Traceback" not in done.err
    status = json.loads(keep("status", "--store", store, "--json").out)
    assert status["workflows"] == []


def test_an_unreadable_seed_exits_2_and_deploys_nothing(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    seed = tmp_path / "bad.yaml"
    seed.write_text("sheets: [unclosed\n")
    done = keep("run", str(DEMO), "--store", store, "--seed", str(seed), "--until-idle")
    assert done.code == 2
    assert "not valid JSON/YAML" in done.err
    assert json.loads(keep("status", "--store", store, "--json").out)["workflows"] == []


def test_a_seeded_fault_fires_and_the_run_backs_off(tmp_path: Path) -> None:
    seed = json.loads(SAMPLE.read_text())
    seed["faults"] = [{"connector": "sheets", "operation": "appendRow", "kind": "transient"}]
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    done = keep(
        "run", str(DEMO), "--store", store, "--seed", str(write(tmp_path / "s.json", seed)),
        "--until-idle", "--isolation", "in-process", *ALL_GRANTS,
    )  # fmt: skip
    assert done.code == 3, done.err  # nothing failed; the run waits on a fault: come back later
    assert "service unavailable (503)" in done.out
    [workflow] = json.loads(keep("status", "--store", store, "--json").out)["workflows"]
    [waiting] = workflow["waiting"]
    assert waiting["why"].startswith("will try again at ")
    assert not waiting["needsPerson"]
