"""`reading()` snapshot isolation against a second store on the same data.

For stores that declare ``supports_reading_snapshots`` (and ``supports_reopen``):
once a `reading()` block has answered its first query, what another store
commits is not visible to the block's later queries, and is visible after it.
"""

from __future__ import annotations

from collections.abc import Callable

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._support import CONSUMER
from keep_sdk.model import HandlerKind
from keep_sdk.stores import (
    Publication,
    Store,
    StoreCapability,
    SupportsCounts,
    SupportsPages,
)

__all__ = ["SnapshotTests"]


def _view(store: Store, workflow: str) -> dict[str, object]:
    """What a planning step or a person's page reads about one workflow."""
    view: dict[str, object] = {
        "workflow": store.get_workflow(workflow),
        "events": store.list_events(workflow),
        "pending": store.pending_events(workflow, "in", limit=10),
        "runs": store.list_runs(workflow=workflow),
        "active": [r.id for r in store.active_runs() if r.workflow == workflow],
        "wakes": [w for w in store.consumers_to_wake() if w.workflow == workflow],
    }
    if isinstance(store, SupportsCounts):
        view["counts"] = store.count_by_status(workflow)
    if isinstance(store, SupportsPages):
        view["page"] = store.page_events(workflow, limit=5)
    return view


class SnapshotTests(StoreTestBase):
    """One `reading()` block answers from one snapshot."""

    def _second(self, reopen: Callable[[], Store]) -> Store:
        self.require(StoreCapability.READING_SNAPSHOTS)
        return reopen()

    def test_another_stores_commit_is_not_visible_inside_one_reading_block(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        wf = self.deploy(store)
        self.publish(store, wf, "before")
        other = self._second(reopen)
        with store.reading():
            first = _view(store, wf)
            other.publish(wf, Publication(topic="in", message_id="during", title="during"))
            other.begin_run(wf, CONSUMER, HandlerKind.CONSUMER)
            other.pause_workflow(wf, actor="ops")
            again = _view(store, wf)
            assert again == first, "a commit of another store became visible inside reading()"
        assert [e.message_id for e in store.list_events(wf)] == ["before", "during"]
        assert store.get_workflow(wf).paused
        assert [r.workflow for r in store.active_runs()].count(wf) == 1

    def test_a_reading_block_sees_its_own_stores_earlier_commits(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        wf = self.deploy(store)
        other = self._second(reopen)
        other.publish(wf, Publication(topic="in", message_id="earlier", title="earlier"))
        with store.reading():
            assert [e.message_id for e in store.list_events(wf)] == ["earlier"]
