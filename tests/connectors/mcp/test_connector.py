"""The MCP connector against a real MCP server, over stdio and streamable HTTP."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.mcp import McpConnector, McpSettings, McpToolSettings, build, js_name
from keep_sdk.errors import (
    ConfigurationError,
    InvalidArguments,
    PreconditionFailed,
    TransientError,
    UncertainOutcome,
    UnknownOperation,
)
from keep_sdk.model import OperationKind, ReconcileStatus
from tests.connectors.mcp.servers import free_port, http_server, notes, set_fault, stdio_settings


def test_tools_become_operations_with_kinds_from_annotations(
    notes_connector: McpConnector,
) -> None:
    ops = {op.name: op for op in notes_connector.manifest().operations}
    assert set(ops) == {"addNote", "deleteNote", "findByKey", "grow", "searchNotes"}
    assert ops["searchNotes"].kind is OperationKind.READ
    assert ops["searchNotes"].permission == "notes.read"
    assert ops["addNote"].kind is OperationKind.MUTATION
    assert ops["addNote"].permission == "notes.write"
    assert ops["addNote"].reconcilable
    assert ops["deleteNote"].kind is OperationKind.MUTATION
    assert ops["addNote"].arguments["required"] == ["text"]
    assert ops["addNote"].arguments["properties"]["text"]["type"] == "string"


def test_a_read_and_a_mutation_reach_the_server_with_the_key_in_meta(
    notes_connector: McpConnector, state: Path
) -> None:
    result = notes_connector.invoke("addNote", {"text": "hello"}, idempotency_key="keep-k1")
    assert result == {"id": "n1"}
    assert notes(state) == [{"id": "n1", "text": "hello", "key": "keep-k1"}]
    assert notes_connector.invoke("searchNotes", {"query": "hell"}) == {"notes": notes(state)}
    assert notes_connector.invoke("searchNotes", {"query": "zzz"}) == {"notes": []}


def test_arguments_are_checked_against_the_input_schema_before_sending(
    notes_connector: McpConnector, state: Path
) -> None:
    with pytest.raises(InvalidArguments) as caught:
        notes_connector.invoke("addNote", {"text": 3}, idempotency_key="keep-k1")
    assert "ctx.notes.addNote" in str(caught.value)
    assert "`text`: 3 is not of type 'string'" in str(caught.value)
    with pytest.raises(InvalidArguments, match="'text' is a required property"):
        notes_connector.invoke("addNote", {}, idempotency_key="keep-k1")
    with pytest.raises(UnknownOperation, match="it offers: addNote, deleteNote"):
        notes_connector.invoke("removeAll", {})
    assert notes(state) == []


def test_a_tool_error_is_a_definite_failure(notes_connector: McpConnector, state: Path) -> None:
    set_fault(state, "error")
    with pytest.raises(PreconditionFailed, match="refuses this note"):
        notes_connector.invoke("addNote", {"text": "x"}, idempotency_key="keep-k1")
    assert notes(state) == []


def test_a_stdio_crash_after_the_effect_is_uncertain_and_reconciles_to_applied(
    state: Path,
) -> None:
    with build("notes", stdio_settings(state, reconcile_tool="find_by_key")) as connector:
        set_fault(state, "crash_after")
        with pytest.raises(UncertainOutcome, match="may have taken effect"):
            connector.invoke("addNote", {"text": "x"}, idempotency_key="keep-k1")
        outcome = connector.reconcile("addNote", {"text": "x"}, "keep-k1")
        assert outcome.status is ReconcileStatus.APPLIED
        assert outcome.result == {"id": "n1"}
        assert connector.invoke("addNote", {"text": "x"}, idempotency_key="keep-k1") == {"id": "n1"}
    assert len(notes(state)) == 1


def test_an_http_crash_after_the_effect_reconciles_once_the_server_is_back(state: Path) -> None:
    port = free_port()
    settings = McpSettings(
        url=f"http://127.0.0.1:{port}/mcp", reconcile_tool="find_by_key", call_timeout_s=5.0
    )
    with http_server(state, port=port):
        connector = build("notes", settings)
        set_fault(state, "crash_after")
        with pytest.raises(UncertainOutcome, match="may have taken effect"):
            connector.invoke("addNote", {"text": "x"}, idempotency_key="keep-k1")
    with connector:
        outcome = connector.reconcile("addNote", {"text": "x"}, "keep-k1")
        assert outcome.status is ReconcileStatus.RETRY
        with http_server(state, port=port):
            outcome = connector.reconcile("addNote", {"text": "x"}, "keep-k1")
    assert outcome.status is ReconcileStatus.APPLIED
    assert outcome.result == {"id": "n1"}
    assert len(notes(state)) == 1


def test_a_crash_before_the_effect_reconciles_to_failed(state: Path) -> None:
    connector = build("notes", stdio_settings(state, reconcile_tool="find_by_key"))
    with connector:
        set_fault(state, "crash_before")
        with pytest.raises(UncertainOutcome):
            connector.invoke("addNote", {"text": "x"}, idempotency_key="keep-k1")
        outcome = connector.reconcile("addNote", {"text": "x"}, "keep-k1")
        assert outcome.status is ReconcileStatus.FAILED
        assert notes(state) == []
        assert connector.invoke("addNote", {"text": "x"}, idempotency_key="keep-k1") == {"id": "n1"}


def test_a_hanging_mutation_times_out_as_uncertain(state: Path) -> None:
    connector = build("notes", stdio_settings(state, call_timeout_s=1.0))
    with connector:
        set_fault(state, "hang")
        started = time.monotonic()
        with pytest.raises(UncertainOutcome, match="no answer within 1s"):
            connector.invoke("addNote", {"text": "x"}, idempotency_key="keep-k1")
        assert time.monotonic() - started < 30


def test_a_refused_http_connection_fails_reads_and_mutations_as_transient_at_once(
    state: Path,
) -> None:
    with http_server(state) as url:
        connector = build("notes", McpSettings(url=url, call_timeout_s=120.0))
    with connector:
        started = time.monotonic()
        with pytest.raises(TransientError, match=r"ctx\.notes\.searchNotes: cannot reach"):
            connector.invoke("searchNotes", {})
        sent_nothing = r"addNote: cannot reach the MCP server .*; nothing was sent"
        with pytest.raises(TransientError, match=sent_nothing):
            connector.invoke("addNote", {"text": "x"}, idempotency_key="keep-k1")
        assert time.monotonic() - started < 60, "waited for the call timeout"
    assert notes(state) == []


def test_without_a_reconcile_tool_mutations_are_not_reconcilable(state: Path) -> None:
    with build("notes", stdio_settings(state)) as connector:
        assert not connector.operation("addNote").reconcilable


def test_overrides_set_kind_permission_and_name(state: Path) -> None:
    overrides = {
        "search_notes": McpToolSettings(kind=OperationKind.READ_BY_ID),
        "delete-note": McpToolSettings(permission="notes.admin", name="remove"),
        "grow": McpToolSettings(kind=OperationKind.MUTATION),
    }
    with build("notes", stdio_settings(state, tools=overrides)) as connector:
        ops = {op.name: op for op in connector.manifest().operations}
    assert ops["searchNotes"].kind is OperationKind.READ_BY_ID
    assert ops["remove"].permission == "notes.admin"
    assert "deleteNote" not in ops
    assert ops["grow"].kind is OperationKind.MUTATION
    assert ops["grow"].permission == "notes.write"


def test_an_override_of_a_tool_the_server_lacks_is_one_clear_message(state: Path) -> None:
    settings = stdio_settings(state, tools={"serch_notes": McpToolSettings(kind="read")})
    with pytest.raises(ConfigurationError) as caught:
        build("notes", settings)
    message = str(caught.value)
    assert "`tools.serch_notes`" in message
    assert "search_notes" in message


def test_a_mutation_as_reconcile_tool_is_refused(state: Path) -> None:
    with pytest.raises(ConfigurationError, match="is a mutation; name a read tool"):
        build("notes", stdio_settings(state, reconcile_tool="add_note"))


def test_a_missing_server_program_is_one_clear_message(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-server")
    with pytest.raises(ConfigurationError) as caught:
        build("notes", McpSettings(command=missing, connect_timeout_s=5))
    assert f"could not start the MCP server {missing}" in str(caught.value)
    assert "check `command`" in str(caught.value)


def test_a_server_that_exits_at_once_is_one_clear_message() -> None:
    settings = McpSettings(command=sys.executable, args=["-c", "pass"], connect_timeout_s=5)
    with pytest.raises(ConfigurationError, match="could not start the MCP server"):
        build("notes", settings)


def test_a_refused_connection_is_one_clear_message() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(ConfigurationError) as caught:
        build("notes", McpSettings(url=url, connect_timeout_s=5))
    assert f"could not reach the MCP server {url}" in str(caught.value)
    assert "check `url`" in str(caught.value)


def test_secrets_in_env_and_headers_stay_out_of_messages(tmp_path: Path) -> None:
    settings = McpSettings(
        command=str(tmp_path / "absent"), env={"TOKEN": "s3cr3t-env"}, connect_timeout_s=5
    )
    assert "s3cr3t" not in repr(settings)
    with pytest.raises(ConfigurationError) as caught:
        build("notes", settings)
    assert "s3cr3t" not in str(caught.value)
    url = f"http://127.0.0.1:{free_port()}/mcp"
    http = McpSettings(url=url, headers={"Authorization": "Bearer s3cr3t-h"}, connect_timeout_s=5)
    with pytest.raises(ConfigurationError) as caught:
        build("notes", http)
    assert "s3cr3t" not in str(caught.value)


def test_a_tool_the_server_adds_later_is_not_an_operation(
    notes_connector: McpConnector,
) -> None:
    before = notes_connector.manifest()
    assert notes_connector.invoke("grow", {}) in ("grown", {"result": "grown"})
    assert notes_connector.manifest() == before
    with pytest.raises(UnknownOperation, match="has no operation 'extra'"):
        notes_connector.invoke("extra", {})
    listed = ConnectorSet([notes_connector]).manifest().connector("notes").operations
    assert "extra" not in {op.name for op in listed}


def test_close_ends_the_loop_thread_and_later_calls_fail_cleanly(state: Path) -> None:
    connector = build("notes", stdio_settings(state))
    assert any(t.name == "keep-mcp-notes" for t in threading.enumerate())
    connector.close()
    connector.close()
    assert not any(t.name == "keep-mcp-notes" for t in threading.enumerate())
    with pytest.raises(TransientError):
        connector.invoke("searchNotes", {})


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        ("search", "search"),
        ("send_email", "sendEmail"),
        ("delete-note", "deleteNote"),
        ("a.b.c", "aBC"),
        ("Get_User", "getUser"),
    ],
)
def test_js_names(tool: str, expected: str) -> None:
    assert js_name(tool) == expected


def test_each_key_takes_effect_once_however_often_it_is_sent(state: Path) -> None:
    sent: list[tuple[str, str]] = []

    @settings(max_examples=25, deadline=None)
    @given(
        texts=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=4),
        repeats=st.integers(min_value=1, max_value=3),
    )
    def check(texts: list[str], repeats: int) -> None:
        for text in texts:
            key = f"keep-{len(sent)}"
            sent.append((key, text))
            for _ in range(repeats):
                connector.invoke("addNote", {"text": text}, idempotency_key=key)
            outcome = connector.reconcile("addNote", {"text": text}, key)
            assert outcome.status is ReconcileStatus.APPLIED
        held = notes(state)
        assert [(n["key"], n["text"]) for n in held] == sent

    with build("notes", stdio_settings(state, reconcile_tool="find_by_key")) as connector:
        check()


def test_a_wrong_token_is_one_clear_message_without_the_token(state: Path) -> None:
    with http_server(state, token="right-t0ken-4711") as url:
        good = build(
            "notes", McpSettings(url=url, headers={"Authorization": "Bearer right-t0ken-4711"})
        )
        with good:
            assert good.invoke("searchNotes", {"query": ""}) == {"notes": []}
        wrong = McpSettings(
            url=url, headers={"Authorization": "Bearer wr0ng-t0ken-1234"}, connect_timeout_s=5
        )
        with pytest.raises(ConfigurationError) as caught:
            build("notes", wrong)
    message = str(caught.value)
    assert message == (
        f"connector 'notes': the MCP server {url} refused the credentials (it answered HTTP "
        "401 Unauthorized); check `headers` of [connectors.notes] in keep.toml and the "
        "secret they reference"
    )
