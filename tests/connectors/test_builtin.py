"""The built-in doubles: behaviour, every fault kind, file backing across a SIGKILL."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import keep_sdk
from keep_sdk.connectors.builtin import FaultKind, Gmail, Sheets, Slack
from keep_sdk.model import ReconcileStatus

MAIL = {
    "messages": [
        {
            "id": "m2",
            "from": "bob@example.com",
            "to": "me@example.com",
            "subject": "Lunch?",
            "body": "Tomorrow at noon",
            "receivedAt": "2026-11-20T12:00:00Z",
        },
        {
            "id": "m1",
            "from": "alice@example.com",
            "to": "me@example.com",
            "subject": "Invoice December",
            "body": "Please find the invoice attached",
            "receivedAt": "2026-11-20T09:00:00Z",
        },
    ]
}
ROW = {"spreadsheetId": "reports", "values": ["alice@example.com", "Invoice December"]}


def sheets(**kwargs: object) -> Sheets:
    return Sheets(seed={"spreadsheets": {"reports": {"rows": []}}}, **kwargs)  # type: ignore[arg-type]


def test_gmail_search_is_oldest_first_with_query_and_cursor() -> None:
    gmail = Gmail(seed=MAIL)
    found = gmail.invoke("search", {})
    assert isinstance(found, list)
    assert [m["id"] for m in found] == ["m1", "m2"]  # type: ignore[index,call-overload]
    assert [m["id"] for m in gmail.invoke("search", {"query": "from:alice"})] == ["m1"]  # type: ignore[index,union-attr,call-overload]
    after = gmail.invoke("search", {"after": "2026-11-20T09:00:00Z"})
    assert [m["id"] for m in after] == ["m2"]  # type: ignore[index,union-attr,call-overload]
    assert gmail.invoke("getById", {"id": "m9"}) is None


def test_sheets_append_then_read_back() -> None:
    double = sheets()
    assert double.invoke("appendRow", ROW, idempotency_key="k1") == {
        "rowId": "row-1",
        "rowNumber": 1,
    }
    assert double.invoke("listRows", {"spreadsheetId": "reports"}) == [
        {"rowId": "row-1", "values": ROW["values"]}
    ]
    double.invoke(
        "updateRow",
        {"spreadsheetId": "reports", "rowId": "row-1", "values": ["x"]},
        idempotency_key="k2",
    )
    assert double.invoke("getRow", {"spreadsheetId": "reports", "rowId": "row-1"}) == {
        "rowId": "row-1",
        "values": ["x"],
    }


def test_a_missing_spreadsheet_is_a_definite_failure() -> None:
    with pytest.raises(keep_sdk.PreconditionFailed, match="'nope' does not exist"):
        sheets().invoke("appendRow", {**ROW, "spreadsheetId": "nope"}, idempotency_key="k")


def test_slack_posts_only_to_existing_channels_and_has_no_reconcile() -> None:
    slack = Slack(seed={"channels": {"#finance": []}})
    assert slack.invoke(
        "postMessage", {"channel": "#finance", "text": "3 invoices"}, idempotency_key="k"
    ) == {"channel": "#finance", "ts": "1.000100"}
    with pytest.raises(keep_sdk.PreconditionFailed, match="channel_not_found"):
        slack.invoke("postMessage", {"channel": "#ops", "text": "x"}, idempotency_key="k2")
    assert not Slack.operation("postMessage").reconcilable


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (FaultKind.TRANSIENT, keep_sdk.TransientError),
        (FaultKind.PERMISSION_DENIED, keep_sdk.PermissionDenied),
        (FaultKind.FAILURE, keep_sdk.PreconditionFailed),
        (FaultKind.TIMEOUT_BEFORE_EFFECT, keep_sdk.UncertainOutcome),
    ],
)
def test_faults_before_the_effect_leave_nothing_behind(
    fault: FaultKind, error: type[Exception]
) -> None:
    double = sheets()
    double.faults.inject(fault, operation="appendRow")
    with pytest.raises(error):
        double.invoke("appendRow", ROW, idempotency_key="k1")
    assert double.effects() == []
    assert double.reconcile("appendRow", ROW, "k1").status is ReconcileStatus.FAILED
    double.invoke("appendRow", ROW, idempotency_key="k1")
    assert len(double.effects()) == 1


def test_permission_denied_names_the_permission() -> None:
    double = sheets()
    double.faults.inject(FaultKind.PERMISSION_DENIED)
    with pytest.raises(keep_sdk.PermissionDenied) as info:
        double.invoke("appendRow", ROW, idempotency_key="k1")
    assert info.value.permission == "sheets.write"


def test_a_timeout_after_the_effect_reconciles_as_applied() -> None:
    double = sheets()
    double.faults.inject(FaultKind.TIMEOUT_AFTER_EFFECT, operation="appendRow")
    with pytest.raises(keep_sdk.UncertainOutcome):
        double.invoke("appendRow", ROW, idempotency_key="k1")
    outcome = double.reconcile("appendRow", ROW, "k1")
    assert outcome.status is ReconcileStatus.APPLIED
    assert outcome.result == {"rowId": "row-1", "rowNumber": 1}


def test_a_fault_fires_only_for_its_operation_and_count() -> None:
    double = sheets()
    double.faults.inject(FaultKind.TRANSIENT, operation="listRows", times=2)
    double.invoke("appendRow", ROW, idempotency_key="k1")
    for _ in range(2):
        with pytest.raises(keep_sdk.TransientError):
            double.invoke("listRows", {"spreadsheetId": "reports"})
    assert len(double.invoke("listRows", {"spreadsheetId": "reports"})) == 1  # type: ignore[arg-type]


def test_slow_calls_take_their_time() -> None:
    import time

    double = sheets()
    double.faults.inject(FaultKind.SLOW, delay_s=0.2)
    started = time.monotonic()
    double.invoke("listRows", {"spreadsheetId": "reports"})
    assert time.monotonic() - started >= 0.2


def _child(backing: Path, fault: str) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(
        f"""
        from keep_sdk.connectors.builtin import FaultKind, Sheets
        s = Sheets(backing={str(backing)!r})
        s.faults.inject(FaultKind({fault!r}))
        s.invoke("appendRow", {ROW!r}, idempotency_key="k1")
        print("survived")
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("fault", "effects"), [("crash_before_effect", 0), ("crash_after_effect", 1)]
)
def test_file_backing_counts_effects_across_a_sigkill(
    tmp_path: Path, fault: str, effects: int
) -> None:
    backing = tmp_path / "doubles.db"
    sheets(backing=backing)
    result = _child(backing, fault)
    assert result.returncode == -9, result.stderr
    assert "survived" not in result.stdout
    after = Sheets(backing=backing)
    assert len(after.effects("appendRow")) == effects
    expected = ReconcileStatus.APPLIED if effects else ReconcileStatus.FAILED
    assert after.reconcile("appendRow", ROW, "k1").status is expected


def test_doubles_share_one_backing_file(tmp_path: Path) -> None:
    backing = tmp_path / "doubles.db"
    sheets(backing=backing).invoke("appendRow", ROW, idempotency_key="k1")
    Slack(backing=backing, seed={"channels": {"#a": []}}).invoke(
        "postMessage", {"channel": "#a", "text": "hi"}, idempotency_key="k2"
    )
    assert len(Sheets(backing=backing).effects()) == 1
    assert len(Slack(backing=backing).effects()) == 1


def test_a_reconcile_that_cannot_reach_the_service_answers_retry() -> None:
    double = sheets()
    double.faults.inject(FaultKind.TRANSIENT, operation="reconcile:appendRow", times=2)
    for _ in range(2):
        assert double.reconcile("appendRow", ROW, "k1").status is ReconcileStatus.RETRY
    assert double.reconcile("appendRow", ROW, "k1").status is ReconcileStatus.FAILED
