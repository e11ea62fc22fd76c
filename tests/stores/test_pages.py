"""Keyset pages agree between the memory store and SQLite for any events, filters and page
size: following the cursor gives exactly the filtered list, newest first."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.model import EventStatus, HandlerKind
from keep_sdk.stores import HandlerSpec, MemoryStore, Publication, SqlStore, Store, SupportsPages

HANDLERS = [HandlerSpec(name="c", kind=HandlerKind.CONSUMER, subscribe=["a"])]

events = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.booleans()), max_size=25)


def _fill(store: Store, rows: list[tuple[str, bool]]) -> None:
    store.deploy("w", "export default Keep.workflow({})", {"topics": ["a", "b"]}, handlers=HANDLERS)
    for i, (topic, skipped) in enumerate(rows):
        event = store.publish("w", Publication(topic=topic, message_id=f"m{i}", title=f"t{i}"))
        if skipped:
            store.skip_event(event.event.id, actor="tester")


def _walk(store: SupportsPages, limit: int, **filters: object) -> list[str]:
    seen: list[str] = []
    before = None
    while True:
        page = store.page_events("w", before=before, limit=limit, **filters)  # type: ignore[arg-type]
        assert len(page) <= limit
        if not page:
            return seen
        seen += [e.message_id for e in page]
        before = page[-1].id


@settings(max_examples=30, deadline=None)
@given(
    rows=events,
    limit=st.integers(min_value=1, max_value=7),
    topic=st.none() | st.sampled_from(["a", "b"]),
    status=st.none() | st.sampled_from([EventStatus.PENDING, EventStatus.SKIPPED]),
)
def test_memory_and_sqlite_pages_are_the_filtered_list_newest_first(
    rows: list[tuple[str, bool]], limit: int, topic: str | None, status: EventStatus | None
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        sql = SqlStore(f"sqlite:///{Path(folder) / 'k.db'}")
        memory = MemoryStore()
        try:
            for store in (memory, sql):
                _fill(store, rows)
            expected = [e.message_id for e in memory.list_events("w", topic=topic, status=status)][
                ::-1
            ]
            for store in (memory, sql):
                assert _walk(store, limit, topic=topic, status=status) == expected
        finally:
            sql.close()
