"""Random interleavings of publishes, faults, clock steps and restarts (hypothesis).

Whatever happens, the scheduler becomes idle, and once the faults stop and
enough time passes every event is consumed, each appended exactly once and in
publish order (a FIFO consumer is never overtaken by a later run of itself).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import FaultKind, Gmail, Sheets, Slack
from keep_sdk.model import EventStatus, LedgerStatus, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import PersonActions, Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.scheduler import Scheduler
from keep_sdk.stores import Publication, open_store
from tests.runtime.harness import MAIL_TO_SHEET, T0, fast_policy

LOADER = KeepPlugins(load_entry_points=False).load_workflow

FAULTS = [
    FaultKind.TRANSIENT,
    FaultKind.TIMEOUT_BEFORE_EFFECT,
    FaultKind.TIMEOUT_AFTER_EFFECT,
]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.integers(min_value=1, max_value=3)),
        st.tuples(st.just("fault"), st.sampled_from(FAULTS)),
        st.tuples(st.just("reconcile-retry"), st.integers(min_value=1, max_value=2)),
        st.tuples(st.just("advance"), st.sampled_from([0.5, 5.0, 30.0, 400.0])),
        st.tuples(st.just("restart"), st.just(0)),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(steps)
def test_every_event_is_appended_once_in_order(plan: list[tuple[str, object]]) -> None:
    clock = ManualClock(T0)
    store = open_store("memory://", clock=clock)
    sheets = Sheets(seed={"spreadsheets": {"reports": {"rows": []}}}, clock=clock)
    connectors = ConnectorSet([Gmail(clock=clock), sheets, Slack(clock=clock)])

    def host() -> Scheduler:
        runtime = Runtime(
            store,
            connectors,
            load_workflow=LOADER,
            policy=fast_policy(),
            now=clock,
            deterministic=True,
            isolation=InProcessIsolation(),
        )
        return Scheduler(runtime, worker="w")

    scheduler = host()
    scheduler.runtime.deploy(MAIL_TO_SHEET)
    store.grant_permission("mail-to-sheet", "sheets.write", actor="test")
    store.grant_permission("mail-to-sheet", "gmail.read", actor="test")
    published: list[str] = []
    for action, argument in plan:
        if action == "publish":
            for _ in range(int(str(argument))):
                message_id = f"e{len(published)}"
                published.append(message_id)
                store.publish(
                    "mail-to-sheet",
                    Publication(
                        topic="email.received",
                        message_id=message_id,
                        title=f"Email {message_id}",
                        payload={"from": message_id, "subject": "s"},
                    ),
                )
        elif action == "fault":
            sheets.faults.inject(FaultKind(str(argument)), operation="appendRow")
        elif action == "reconcile-retry":
            sheets.faults.inject(
                FaultKind.TRANSIENT, operation="reconcile:appendRow", times=int(str(argument))
            )
        elif action == "advance":
            clock.advance(float(str(argument)))
        else:
            scheduler = host()
        scheduler.run_until_idle(max_steps=200)
    sheets.faults.clear()
    for _ in range(50):
        scheduler.run_until_idle(max_steps=200)
        for run in store.list_runs(status=RunStatus.PAUSED_RECONCILIATION):
            entry = store.ledger_entry_for_run(run.id)
            if entry is not None and entry.status is LedgerStatus.INDETERMINATE:
                PersonActions(scheduler.runtime).try_again(run.id, actor="person")
        events = store.list_events("mail-to-sheet", topic="email.received")
        if all(e.status is EventStatus.CONSUMED for e in events):
            break
        upcoming = scheduler.next_due()
        assert upcoming is not None, "events wait, but nothing is scheduled to continue them"
        clock.set(max(clock(), upcoming))
    events = store.list_events("mail-to-sheet", topic="email.received")
    assert {e.message_id: e.status for e in events} == dict.fromkeys(
        published, EventStatus.CONSUMED
    )
    rows = [r["values"][0] for r in sheets.snapshot()["spreadsheets"]["reports"]["rows"]]
    assert rows == published
    keys = [e["idempotencyKey"] for e in sheets.effects("appendRow")]
    assert len(keys) == len(set(keys))
