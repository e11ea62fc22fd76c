"""What a person reads about a durable wait is true (issue 31 part 5): ``keep wait
--extend`` adds to the deadline, ``--until`` sets it, and the ledger says what was
decided after ``keep cancel`` and ``keep wait --supply``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from keep_sdk.app import Installation
from keep_sdk.stores import SupportsDurable
from tests.cli.terminal import keep
from tests.durable.test_cli_document_request import installed, request, waiting

__all__ = ["installed"]


def _deadline(store: str, run_id: str) -> dt.datetime | None:
    inst = Installation.open(store, isolation="in-process")
    try:
        assert isinstance(inst.store, SupportsDurable)
        invocation = inst.store.invocation_for_run(run_id)
        assert invocation is not None
        return invocation.timeout_at
    finally:
        inst.close()


def test_extend_adds_to_the_current_deadline_and_until_sets_it(
    installed: tuple[Path, str],
) -> None:
    script, store = installed
    request(script, store, "case-x")
    [wait] = waiting(store)
    run_id = str(wait["runId"])
    before = _deadline(store, run_id)
    assert before is not None
    assert before - dt.datetime.now(dt.UTC) > dt.timedelta(days=13)
    done = keep("wait", run_id, "--extend", "P1D", "--store", store, "--isolation", "in-process")
    assert done.code == 0, done.err
    assert _deadline(store, run_id) == before + dt.timedelta(days=1)
    done = keep(
        "wait", run_id, "--until", "2031-01-02T03:04:05+01:00", "--store", store,
        "--isolation", "in-process",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert _deadline(store, run_id) == dt.datetime(2031, 1, 2, 2, 4, 5, tzinfo=dt.UTC)
    naive = keep("wait", run_id, "--until", "2031-01-02T03:04:05", "--store", store)
    assert naive.code == 2
    assert "no UTC offset" in naive.err
    assert "Traceback" not in naive.err


def _ledger_text(store: str) -> str:
    done = keep("ledger", "--store", store)
    assert done.code == 0, done.err
    return done.out


def test_the_ledger_says_a_cancel_was_a_cancel(installed: tuple[Path, str]) -> None:
    script, store = installed
    request(script, store, "case-c")
    [wait] = waiting(store)
    done = keep("cancel", str(wait["runId"]), "--store", store, "--isolation", "in-process")
    assert done.code == 0, done.err
    shown = _ledger_text(store)
    assert "a retry run makes it again" not in shown
    assert "cancelled by" in shown
    assert 'next saw {status: "skipped"}' in shown


def test_the_ledger_shows_the_supplied_result(installed: tuple[Path, str]) -> None:
    script, store = installed
    request(script, store, "case-s")
    [wait] = waiting(store)
    supplied = {"file": "passport-by-hand.pdf"}
    done = keep(
        "wait", str(wait["runId"]), "--supply", json.dumps(supplied), "--store", store,
        "--isolation", "in-process",
    )  # fmt: skip
    assert done.code == 0, done.err
    shown = _ledger_text(store)
    assert "confirmed on" not in shown
    assert 'happened, with result {"file":"passport-by-hand.pdf"}' in shown
