"""Workflows calling MCP tools through the real Runtime, QuickJS and a real MCP server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.errors import ScriptRejected
from keep_sdk.model import EventStatus, HandlerKind, LedgerStatus, RunStatus
from keep_sdk.stores import HandlerSpec, Store, open_store
from keep_sdk.validator import validate
from tests.connectors.mcp.flow import NOTES_FLOW, notes_connector, request_note, runtime, settle
from tests.connectors.mcp.servers import notes, set_fault

CHILD = Path(__file__).with_name("crash_child.py")
ROOT = Path(__file__).parents[3]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'keep.db'}")
    yield opened
    opened.close()


def _deploy(store: Store, state: Path) -> None:
    with notes_connector(state) as connector:
        runtime(store, connector).deploy(NOTES_FLOW)
    for permission in ("notes.read", "notes.write"):
        store.grant_permission("notes-flow", permission, actor="test")


def test_a_consumer_adds_the_note_once_with_the_runs_key(store: Store, state: Path) -> None:
    _deploy(store, state)
    request_note(store, "r1", "buy milk")
    with notes_connector(state) as connector:
        run = runtime(store, connector).run_consumer("notes-flow", "addNote")
        assert run.status is RunStatus.COMMITTED
        producer = runtime(store, connector).run_producer("notes-flow", "count")
        assert producer.status is RunStatus.COMMITTED
    assert store.get_handler("notes-flow", "count").state == {"seen": 1}
    [entry] = store.list_ledger(status=LedgerStatus.APPLIED)
    assert entry.result == {"id": "n1"}
    assert notes(state) == [{"id": "n1", "text": "buy milk", "key": entry.idempotency_key}]
    added = store.list_events("notes-flow", topic="note.added")
    assert [e.payload for e in added] == [{"id": "n1"}]


def test_a_server_crash_after_the_effect_is_reconciled_not_repeated(
    store: Store, state: Path
) -> None:
    _deploy(store, state)
    request_note(store, "r1", "buy milk")
    set_fault(state, "crash_after")
    with notes_connector(state) as connector:
        rt = runtime(store, connector)
        run = rt.run_consumer("notes-flow", "addNote")
        settle(rt)
        assert store.get_run(run.id).status is RunStatus.COMMITTED
    assert len(notes(state)) == 1
    assert len(store.list_ledger(status=LedgerStatus.APPLIED)) == 1


def test_a_tool_error_fails_the_mutation_and_nothing_is_added(store: Store, state: Path) -> None:
    _deploy(store, state)
    request_note(store, "r1", "buy milk")
    set_fault(state, "error")
    with notes_connector(state) as connector:
        run = runtime(store, connector).run_consumer("notes-flow", "addNote")
    assert run.status is RunStatus.FAILED_LOGIC
    assert "refuses this note" in (run.error or "")
    assert notes(state) == []
    [entry] = store.list_ledger()
    assert entry.status is LedgerStatus.FAILED


@pytest.mark.parametrize(
    ("call", "rule"),
    [
        ("ctx.notes.removeAll({})", "unknown-operation"),
        ('ctx.notes.addNote({ txt: "x" })', "invalid-arguments"),
        ("ctx.notes.addNote({ text: 3 })", "invalid-arguments"),
    ],
)
def test_the_validator_checks_mcp_tools_at_deploy(
    store: Store, state: Path, call: str, rule: str
) -> None:
    source = NOTES_FLOW.replace("ctx.notes.addNote({ text: prepared.data.text })", call)
    with notes_connector(state) as connector, pytest.raises(ScriptRejected) as caught:
        runtime(store, connector).deploy(source)
    assert rule in str(caught.value)


def test_a_server_that_changed_its_tools_cannot_change_a_deployed_version(
    store: Store, state: Path
) -> None:
    _deploy(store, state)
    request_note(store, "r1", "buy milk")
    with notes_connector(state, variant="changed") as changed:
        rt = runtime(store, changed)
        producer = rt.run_producer("notes-flow", "count")
        assert producer.status is RunStatus.FAILED_LOGIC
        assert "ctx.notes.searchNotes changed since version 1 of 'notes-flow' was deployed" in (
            producer.error or ""
        )
        assert "it was a read needing notes.read, it is now a mutation" in (producer.error or "")
        consumer = rt.run_consumer("notes-flow", "addNote")
        assert consumer.status is RunStatus.COMMITTED
        with pytest.raises(ScriptRejected, match="phase-forbidden-call"):
            rt.deploy(NOTES_FLOW)
    assert len(notes(state)) == 1


def test_a_tool_added_after_deploy_cannot_be_called_by_that_version(
    store: Store, state: Path
) -> None:
    source = NOTES_FLOW.replace(
        "ctx.notes.addNote({ text: prepared.data.text })", "ctx.notes.purge({})"
    )
    with notes_connector(state) as base:
        frozen = base.manifest()
    manifest = validate(source).workflow
    assert manifest is not None
    from keep_sdk.contract.manifest import Manifest

    stored = manifest.model_copy(update={"connectors": Manifest(connectors=[frozen])})
    store.deploy(
        "notes-flow",
        source,
        stored.model_dump(mode="json"),
        handlers=[
            HandlerSpec(name="count", kind=HandlerKind.PRODUCER),
            HandlerSpec(name="addNote", kind=HandlerKind.CONSUMER, subscribe=["note.requested"]),
        ],
    )
    for permission in ("notes.read", "notes.write"):
        store.grant_permission("notes-flow", permission, actor="test")
    request_note(store, "r1", "buy milk")
    with notes_connector(state) as base:
        base.invoke("addNote", {"text": "keep me"}, idempotency_key="keep-seed")
    with notes_connector(state, variant="changed") as changed:
        run = runtime(store, changed).run_consumer("notes-flow", "addNote")
    assert run.status is RunStatus.FAILED_LOGIC
    assert "not a function (at notes-flow@v1:28" in (run.error or "")
    assert [n["text"] for n in notes(state)] == ["keep me"]


POINTS = [
    "after:begin_consumer_run",
    "server:crash_before",
    "server:crash_after",
    "after:commit_applied_consumer_run",
]
"""The two checkpoints of a call that reconciles (`find_by_key`), and the call between."""


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_sigkill_at_each_durable_checkpoint_adds_the_note_exactly_once(
    tmp_path: Path, state: Path, point: str
) -> None:
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    store = open_store(url)
    _deploy(store, state)
    request_note(store, "r1", "buy milk")
    store.close()
    child = subprocess.run(
        [sys.executable, str(CHILD), url, str(state), point],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    if point.startswith("after:"):
        assert child.returncode == -9, f"child was not killed at {point}: {child.stderr[-2000:]}"
    store = open_store(url)
    try:
        with notes_connector(state) as connector:
            settle(runtime(store, connector))
        assert len(notes(state)) == 1, point
        events = store.list_events("notes-flow", topic="note.requested")
        assert [e.status for e in events] == [EventStatus.CONSUMED], point
        runs = store.list_runs(workflow="notes-flow")
        assert not [r for r in runs if r.status is RunStatus.ACTIVE], point
        assert len(store.list_ledger(status=LedgerStatus.APPLIED)) == 1, point
    finally:
        store.close()
