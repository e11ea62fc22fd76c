"""Workflows sending mail through the real Runtime and a real SMTP server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from keep_sdk.model import EventStatus, LedgerStatus, RunStatus
from keep_sdk.stores import Store, open_store
from tests.connectors.mail.flow import MAIL_FLOW, mail_settings, request_report, runtime
from tests.connectors.mail.smtp_server import SmtpServer

CHILD = Path(__file__).with_name("crash_child.py")
ROOT = Path(__file__).parents[3]


def _deploy(store: Store, server: SmtpServer, sent: Path) -> None:
    runtime(store, mail_settings(server.port, str(sent))).deploy(MAIL_FLOW)
    store.grant_permission("mail-flow", "mail.send", actor="test")


def _settle(store: Store, server: SmtpServer, sent: Path) -> None:
    rt = runtime(store, mail_settings(server.port, str(sent)))
    rt.recover()
    for _ in range(10):
        for entry in store.due_reconciliations(None):
            rt.reconcile(entry.id)
        for paused in store.list_runs(status=RunStatus.PAUSED_TRANSIENT):
            rt.resume(paused.id)
        if not store.pending_events("mail-flow", "report.requested", limit=1):
            return
        rt.run_consumer("mail-flow", "sendReport")


def test_a_send_is_delivered_once_and_its_result_kept(
    tmp_path: Path, server: SmtpServer, sent: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'keep.db'}")
    _deploy(store, server, sent)
    request_report(store, "r1", "boss@example.com", 47)
    run = runtime(store, mail_settings(server.port, str(sent))).run_consumer(
        "mail-flow", "sendReport"
    )
    assert run.status is RunStatus.COMMITTED
    [entry] = store.list_ledger(status=LedgerStatus.APPLIED)
    [message] = server.messages()
    assert message["Message-ID"] == entry.result["messageId"]  # type: ignore[index,call-overload]
    assert message["Subject"] == "Weekly report 47"
    state = store.get_handler("mail-flow", "sendReport").state
    assert state == {"last": "applied", "messageId": message["Message-ID"]}
    store.close()


def test_a_drop_after_acceptance_is_reconciled_from_the_sent_maildir(
    tmp_path: Path, server: SmtpServer, sent: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'keep.db'}")
    _deploy(store, server, sent)
    request_report(store, "r1", "boss@example.com", 47)
    server.recorder.drop_after_accept = 1
    run = runtime(store, mail_settings(server.port, str(sent))).run_consumer(
        "mail-flow", "sendReport"
    )
    _settle(store, server, sent)
    assert store.get_run(run.id).status is RunStatus.COMMITTED
    assert len(server.messages()) == 1
    assert len(store.list_ledger(status=LedgerStatus.APPLIED)) == 1
    store.close()


def test_without_a_sent_maildir_an_uncertain_send_goes_to_a_person(
    tmp_path: Path, server: SmtpServer, sent: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'keep.db'}")
    _deploy(store, server, sent)
    request_report(store, "r1", "boss@example.com", 47)
    server.recorder.drop_after_accept = 1
    settings = mail_settings(server.port, str(sent)).model_copy(update={"sent_maildir": None})
    run = runtime(store, settings).run_consumer("mail-flow", "sendReport")
    assert run.status is RunStatus.PAUSED_RECONCILIATION
    [entry] = store.list_ledger()
    assert entry.status is LedgerStatus.INDETERMINATE
    assert "a person must say whether it happened" in (entry.error or "")
    assert len(server.messages()) == 1
    store.close()


POINTS = ["after:begin_consumer_run", "after:commit_applied_consumer_run"]
"""The two checkpoints of a send that reconciles (the Sent Maildir)."""


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_sigkill_at_each_durable_checkpoint_sends_exactly_once(
    tmp_path: Path, server: SmtpServer, sent: Path, point: str
) -> None:
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    store = open_store(url)
    _deploy(store, server, sent)
    request_report(store, "r1", "boss@example.com", 47)
    store.close()
    child = subprocess.run(
        [sys.executable, str(CHILD), url, str(server.port), str(sent), point],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert child.returncode == -9, f"child was not killed at {point}: {child.stderr[-2000:]}"
    store = open_store(url)
    try:
        _settle(store, server, sent)
        assert len(server.messages()) == 1, point
        events = store.list_events("mail-flow", topic="report.requested")
        assert [e.status for e in events] == [EventStatus.CONSUMED], point
        assert len(store.list_ledger(status=LedgerStatus.APPLIED)) == 1, point
    finally:
        store.close()
