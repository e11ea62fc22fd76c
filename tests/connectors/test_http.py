"""The HTTP connector against a real Starlette service under uvicorn on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import keep_sdk
from keep_sdk.config import load_config
from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.types import BUILTIN_CONNECTOR_TYPES
from keep_sdk.model import OperationKind, ReconcileStatus
from tests.connectors.conftest import TOKEN
from tests.connectors.http_service import RunningService

TYPES = {t.name: t for t in BUILTIN_CONNECTOR_TYPES}

CONFIG = """
[connectors.crm]
type = "http"
base_url = "{url}"
headers = {{ Authorization = "Bearer ${{CRM_TOKEN}}" }}
timeout_s = {timeout}
read_retries = {retries}
max_concurrency = {concurrency}
{extra}

[connectors.crm.operations.getContact]
kind = "read_by_id"
path = "/contacts/{{id}}"
arguments = {{ properties = {{ id = {{ type = "string" }} }}, required = ["id"] }}

[connectors.crm.operations.slow]
kind = "read"
path = "/slow"

[connectors.crm.operations.echoAuth]
kind = "read"
path = "/echo-auth"

[connectors.crm.operations.addNote]
kind = "mutation"
method = "POST"
path = "/notes"
permission = "crm.notes"
arguments = {{ properties = {{ text = {{ type = "string" }} }}, required = ["text"] }}
reconcile = {{ path = "/notes/by-key/{{idempotencyKey}}" }}
"""


_OPEN: list[Connector] = []


@pytest.fixture(autouse=True)
def _close_connectors():
    yield
    while _OPEN:
        _OPEN.pop().close()  # type: ignore[attr-defined]


def crm(
    service: RunningService,
    tmp_path: Path,
    *,
    timeout: float = 5,
    retries: int = 2,
    concurrency: int = 4,
    extra: str = "",
    token: str = TOKEN,
) -> Connector:
    path = tmp_path / "keep.toml"
    path.write_text(
        CONFIG.format(
            url=service.url, timeout=timeout, retries=retries, concurrency=concurrency, extra=extra
        )
    )
    config = load_config(path, types=TYPES, environ={"CRM_TOKEN": token})
    [connector] = config.build_connectors()
    _OPEN.append(connector)
    return connector


def add_note(connector: Connector, text: str = "hello", key: str = "keep-k1") -> Any:
    return connector.invoke("addNote", {"text": text}, idempotency_key=key)


def test_operations_declared_in_config_form_the_manifest(service, tmp_path):
    manifest = crm(service, tmp_path).manifest()
    ops = {op.name: op for op in manifest.operations}
    assert ops["addNote"].kind is OperationKind.MUTATION
    assert ops["addNote"].permission == "crm.notes"
    assert ops["addNote"].reconcilable
    assert ops["getContact"].permission == "crm.read"
    assert ops["getContact"].arguments["required"] == ["id"]
    assert ops["getContact"].arguments["additionalProperties"] is False


def test_a_read_sends_the_credentials_and_returns_the_json_body(service, tmp_path):
    service.state.contacts["c1"] = {"name": "Ada"}
    assert crm(service, tmp_path).invoke("getContact", {"id": "c1"}) == {"name": "Ada"}


def test_arguments_are_checked_against_the_configured_schema(service, tmp_path):
    with pytest.raises(keep_sdk.InvalidArguments) as caught:
        crm(service, tmp_path).invoke("getContact", {"id": 3, "extra": 1})
    assert "`extra` is not a known field" in str(caught.value)
    assert "`id`" in str(caught.value)
    assert service.state.received == []


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(contact_id=st.text(min_size=1, max_size=20).filter(lambda s: s not in (".", "..")))
def test_a_path_parameter_is_one_encoded_segment_whatever_it_holds(service, tmp_path, contact_id):
    service.state.contacts[contact_id] = {"id": contact_id}
    connector = _OPEN[0] if _OPEN else crm(service, tmp_path)
    assert connector.invoke("getContact", {"id": contact_id}) == {"id": contact_id}


@pytest.mark.parametrize("bad", [".", ".."])
def test_dot_segments_are_refused_before_sending(service, tmp_path, bad):
    with pytest.raises(keep_sdk.InvalidArguments):
        crm(service, tmp_path).invoke("getContact", {"id": bad})
    assert service.state.received == []


def test_a_mutation_sends_its_idempotency_key_and_the_json_body(service, tmp_path):
    result = add_note(crm(service, tmp_path), "call back", key="keep-abc")
    assert result == {"noteId": "note-1", "text": "call back", "key": "keep-abc"}
    [received] = service.state.received
    assert received["idempotencyKey"] == "keep-abc"
    assert received["body"] == {"text": "call back"}


def test_403_is_a_permission_failure(service, tmp_path):
    service.fault("/notes", "status", status=403)
    with pytest.raises(keep_sdk.PermissionDenied) as caught:
        add_note(crm(service, tmp_path))
    assert caught.value.permission == "crm.notes"


def test_401_names_the_token_not_a_grant(service, tmp_path):
    """Issue 31: a refused token is fixed in keep.toml; `keep grant` cannot help."""
    service.fault("/notes", "status", status=401)
    with pytest.raises(keep_sdk.PreconditionFailed) as caught:
        add_note(crm(service, tmp_path))
    assert "fix the token in keep.toml" in str(caught.value)
    assert "no permission grant helps" in str(caught.value)


def test_a_wrong_token_is_a_definite_failure_that_does_not_show_the_token(service, tmp_path):
    wrong = "wrong-token-987654321"
    with pytest.raises(keep_sdk.PreconditionFailed) as caught:
        crm(service, tmp_path, token=wrong).invoke("getContact", {"id": "c1"})
    assert wrong not in str(caught.value)
    assert caught.value.__cause__ is None


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503])
def test_408_429_and_5xx_are_transient_and_a_mutation_is_sent_once(service, tmp_path, status):
    service.fault("/notes", "status", status=status, retry_after="7")
    with pytest.raises(keep_sdk.TransientError) as caught:
        add_note(crm(service, tmp_path))
    assert caught.value.retry_after == 7
    assert len(service.state.received) == 1


@pytest.mark.parametrize("status", [400, 404, 409, 422])
def test_other_4xx_are_definite_failures(service, tmp_path, status):
    service.fault("/notes", "status", status=status)
    with pytest.raises(keep_sdk.PreconditionFailed):
        add_note(crm(service, tmp_path))


def test_a_read_retries_a_transient_failure_honouring_retry_after(service, tmp_path):
    service.state.contacts["c1"] = {"name": "Ada"}
    service.fault("/contacts/c1", "status", status=503, retry_after="1", times=1)
    started = time.monotonic()
    assert crm(service, tmp_path).invoke("getContact", {"id": "c1"}) == {"name": "Ada"}
    assert time.monotonic() - started >= 1.0
    assert len(service.state.received) == 2


def test_a_read_gives_up_after_its_retries(service, tmp_path):
    service.fault("/contacts/c1", "status", status=503, times=10)
    with pytest.raises(keep_sdk.TransientError):
        crm(service, tmp_path, retries=2).invoke("getContact", {"id": "c1"})
    assert len(service.state.received) == 3


def test_applied_then_connection_dropped_is_uncertain_and_reconciles_to_applied(service, tmp_path):
    service.fault("/notes", "drop_after_apply")
    connector = crm(service, tmp_path)
    with pytest.raises(keep_sdk.UncertainOutcome):
        add_note(connector, "once", key="keep-drop")
    assert len(service.state.notes) == 1
    outcome = connector.reconcile("addNote", {"text": "once"}, "keep-drop")
    assert outcome.status is ReconcileStatus.APPLIED
    assert outcome.result == {"noteId": "note-1", "text": "once", "key": "keep-drop"}


def test_a_timeout_after_sending_a_mutation_is_uncertain(service, tmp_path):
    service.fault("/notes", "hang", seconds=3)
    with pytest.raises(keep_sdk.UncertainOutcome):
        add_note(crm(service, tmp_path, timeout=0.5), key="keep-slow")
    assert len(service.state.received) == 1


def test_reconcile_of_a_call_that_never_arrived_is_failed(service, tmp_path):
    outcome = crm(service, tmp_path).reconcile("addNote", {"text": "x"}, "keep-never")
    assert outcome.status is ReconcileStatus.FAILED


def test_a_refused_connection_is_transient_and_names_the_address(tmp_path):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    nowhere = RunningService(f"http://127.0.0.1:{port}", None)  # type: ignore[arg-type]
    with pytest.raises(keep_sdk.TransientError) as caught:
        add_note(crm(nowhere, tmp_path))
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "nothing was sent" in str(caught.value)


def test_a_result_that_echoes_the_token_is_redacted(service, tmp_path):
    result = crm(service, tmp_path).invoke("echoAuth", {})
    assert result == {"youSent": "***"}
    assert TOKEN not in str(result)


def test_the_concurrency_limit_holds_under_parallel_calls(service, tmp_path):
    connector = crm(service, tmp_path, concurrency=2)
    threads = [threading.Thread(target=connector.invoke, args=("slow", {})) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(service.state.starts) == 6
    assert service.state.max_in_flight <= 2


def test_the_rate_limit_spaces_request_starts(service, tmp_path):
    connector = crm(service, tmp_path, concurrency=6, extra="rate_limit_per_s = 10")
    threads = [threading.Thread(target=connector.invoke, args=("slow", {})) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    starts = sorted(service.state.starts)
    # Paced at the client 0.1 s apart; the first request also opens the connection, so at
    # the server the spread may be a connection set-up shorter. Unpaced it is milliseconds.
    assert starts[-1] - starts[0] >= 0.3 - 0.1
