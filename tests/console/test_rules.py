"""Which actions a run's state allows, and where the console may listen."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keep_sdk.console import check_bind, is_loopback, run_actions
from keep_sdk.errors import ConfigurationError
from keep_sdk.model import HandlerKind, LedgerEntry, LedgerStatus, RunPhase, RunRecord, RunStatus
from tests.cli.terminal import keep

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _run(status: RunStatus, permission: str | None) -> RunRecord:
    return RunRecord(
        id="run_1", workflow="w", workflow_version=1, handler="h", kind=HandlerKind.CONSUMER,
        phase=RunPhase.MUTATING, status=status, waiting_permission=permission,
        created_at=NOW, updated_at=NOW,
    )  # fmt: skip


def _entry(status: LedgerStatus) -> LedgerEntry:
    return LedgerEntry(
        id="led_1", run_id="run_1", workflow="w", handler="h", connector="slack",
        operation="postMessage", params={}, idempotency_key="k", status=status,
        created_at=NOW, updated_at=NOW,
    )  # fmt: skip


@given(
    status=st.sampled_from(RunStatus),
    ledger=st.none() | st.sampled_from(LedgerStatus),
    permission=st.none() | st.just("sheets.write"),
    reconcilable=st.booleans(),
)
def test_only_actions_the_state_allows_are_offered(
    status: RunStatus, ledger: LedgerStatus | None, permission: str | None, reconcilable: bool
) -> None:
    entry = _entry(ledger) if ledger else None
    offered = run_actions(_run(status, permission), entry, reconcilable=reconcilable)
    if "grant" in offered:
        assert status is RunStatus.PAUSED_APPROVAL
        assert permission is not None
    if "skip" in offered:
        assert status is RunStatus.PAUSED_RECONCILIATION
        assert ledger in (LedgerStatus.INDETERMINATE, LedgerStatus.NEEDS_RECONCILE)
    if "didnt-happen" in offered:
        assert status is RunStatus.PAUSED_RECONCILIATION
        assert ledger not in (None, LedgerStatus.APPLIED, LedgerStatus.IN_FLIGHT)
    if "retry" in offered and status is RunStatus.PAUSED_RECONCILIATION:
        assert reconcilable
    if status in (RunStatus.ACTIVE, RunStatus.COMMITTED, RunStatus.PAUSED_TRANSIENT):
        assert offered == []
    if status in (RunStatus.FAILED_LOGIC, RunStatus.FAILED_INTERNAL, RunStatus.CRASHED):
        assert offered == ["retry"]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.3.2.1", True), ("::1", True), ("[::1]", True),
     ("localhost", True), ("0.0.0.0", False), ("192.168.1.5", False), ("example.com", False),
     ("::", False)],
)  # fmt: skip
def test_a_non_loopback_host_needs_a_configured_token(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    check_bind(host, token_configured=True)
    if loopback:
        check_bind(host, token_configured=False)
    else:
        with pytest.raises(ConfigurationError, match="refusing to serve"):
            check_bind(host, token_configured=False)


def test_keep_serve_refuses_a_public_host_without_a_token_as_bad_usage() -> None:
    done = keep("serve", "--host", "0.0.0.0", "--store", "memory://")
    assert done.code == 2
    assert "refusing to serve on 0.0.0.0" in done.err
    short = keep("serve", "--token", "short", "--store", "memory://")
    assert short.code == 2
    assert "16 characters" in short.err
