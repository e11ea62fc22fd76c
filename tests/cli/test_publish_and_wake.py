"""Issue 17, defects 7 and 8: ``keep publish`` feeds a consumer-only workflow, and a batch
that waits for its wakeAt is not woken again by the next ``keep run --until-idle``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from tests.cli.terminal import BATCHES, keep


@pytest.fixture
def batches(tmp_path: Path) -> tuple[str, str]:
    script = tmp_path / "batches.js"
    script.write_text(BATCHES)
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"slack": {"channels": {"#ops": []}}}))
    done = keep(
        "run", str(script), "--store", store, "--seed", str(seed), "--grant", "slack.write",
        "--until-idle", "--isolation", "in-process",
    )  # fmt: skip
    assert done.code == 0, done.err
    return str(script), store


def publish(store: str, message_id: str, *extra: str) -> tuple[int, str, str]:
    closed = dt.datetime.now(dt.UTC).isoformat()
    done = keep(
        "publish", "ticket.closed", "--message-id", message_id,
        "--title", f"Ticket #{message_id} closed",
        "--payload", json.dumps({"id": message_id, "closedAt": closed}),
        "--store", store, *extra,
    )  # fmt: skip
    return done.code, done.out, done.err


def activities(script: str, store: str) -> list[str]:
    done = keep(
        "run", script, "--store", store, "--until-idle", "--json", "--isolation", "in-process"
    )
    assert done.code == 0, done.err
    return [a["task"]["kind"] for a in json.loads(done.out)["activities"]]


def test_publish_feeds_a_consumer_only_workflow(batches: tuple[str, str]) -> None:
    script, store = batches
    code, out, err = publish(store, "t1")
    assert code == 0, err
    assert out.startswith("created: 'Ticket #t1 closed' in batches/ticket.closed (evt_")
    code, out, _ = publish(store, "t1", "--workflow", "batches")
    assert out.startswith("replaced: ")
    publish(store, "t2")
    code, out, _ = publish(store, "t3", "--json")
    assert json.loads(out)["outcome"] == "created"
    assert activities(script, store) == ["consumer"]
    ops = json.loads(keep("ledger", "--store", store, "--json").out)
    assert [e["uiTitle"] for e in ops] == ["Post a batch of 3 closed tickets"]
    code, _, err = publish(store, "t3")
    assert code == 0
    assert "duplicate" in keep("publish", "ticket.closed", "--message-id", "t3", "--title", "x",
                               "--store", store).out  # fmt: skip


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--payload", "{oops"), 2, "not valid JSON"),
        (("--workflow", "batches", "--title", ""), 2, "title"),
        (("--workflow", "nosuch"), 1, "nosuch"),
    ],
)
def test_publish_refuses_bad_input_in_one_line(
    batches: tuple[str, str], args: tuple[str, ...], code: int, message: str
) -> None:
    _, store = batches
    base = {"--title": "T", "--payload": "null"}
    given = dict(zip(args[::2], args[1::2], strict=True))
    options = [item for key, value in (base | given).items() for item in (key, value)]
    done = keep("publish", "ticket.closed", "--message-id", "m", *options, "--store", store)
    assert done.code == code, (done.out, done.err)
    assert message in done.err
    assert "Traceback" not in done.err


def test_an_undeclared_topic_is_refused(batches: tuple[str, str]) -> None:
    _, store = batches
    done = keep("publish", "nope", "--message-id", "m", "--title", "T", "--store", store,
                "--workflow", "batches")  # fmt: skip
    assert done.code == 1
    assert "declares no topic 'nope'; its topics: ticket.closed" in done.err


def test_a_waiting_batch_is_not_woken_again_by_the_next_keep_run(
    batches: tuple[str, str],
) -> None:
    script, store = batches
    publish(store, "t1")
    assert activities(script, store) == ["consumer"]
    assert activities(script, store) == []
    assert activities(script, store) == []
    publish(store, "t2")
    assert activities(script, store) == ["consumer"]
    assert activities(script, store) == []
