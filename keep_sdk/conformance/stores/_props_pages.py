"""Pages as properties: after random operations, every filter pages full and complete.

For stores implementing `SupportsPages`. Each test drives a seeded random
sequence of operations through `Scenario` and then pages with every filter and
several limits, publishing new rows between pages: a page holds `limit` rows
while matching rows remain, the pages together are exactly the matching rows
newest first, and a row added while paging appears on no later page.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from keep_sdk.conformance.stores._base import StoreTestBase
from keep_sdk.conformance.stores._model import ModelRow, Scenario
from keep_sdk.model import EventStatus, LedgerStatus, RunStatus
from keep_sdk.stores import Store

__all__ = ["PagePropertyTests"]

_LIMITS = (1, 2, 3, 5)
_SEEDS = range(2)


def _follow(
    fetch: Callable[..., Sequence[Any]],
    limit: int,
    key: Callable[[Any], str],
    between: Callable[[], object],
) -> list[list[str]]:
    """Every page `fetch` gives, following the cursor; `between` runs after each page."""
    pages: list[list[str]] = []
    before = None
    while True:
        rows = list(fetch(before=before, limit=limit))
        if not rows:
            return pages
        pages.append([key(row) for row in rows])
        before = rows[-1].id
        between()
        assert len(pages) < 1000, "the cursor never reached the end"


def _check(pages: list[list[str]], expected: list[str], limit: int, what: str) -> None:
    short = [i for i, page in enumerate(pages[:-1]) if len(page) != limit]
    assert not short, (
        f"{what}: page {short[0] + 1} held {len(pages[short[0]])} rows of limit {limit} "
        f"while matching rows remained"
    )
    assert all(len(page) <= limit for page in pages), f"{what}: a page exceeded limit {limit}"
    found = [row for page in pages for row in page]
    assert found == expected, f"{what}: the pages gave {found}, expected {expected} newest first"


class PagePropertyTests(StoreTestBase):
    """Keyset pages against a model: full, complete, ordered, under every filter."""

    def _scenario(self, store: Store, seed: int, workflows: int = 2) -> Scenario:
        scenario = Scenario(store, random.Random(seed))
        scenario.deploy(workflows)
        for _ in range(30):
            scenario.step()
        return scenario

    @pytest.mark.parametrize("seed", _SEEDS)
    def test_event_pages_are_full_and_complete_under_every_filter(
        self, store: Store, seed: int
    ) -> None:
        pager = self.pager(store)
        scenario = self._scenario(store, seed)
        wf = scenario.workflows[0]
        noise = scenario.workflows[1]
        publishers = sorted({e.created_by for e in scenario.events[wf] if e.created_by})
        idle = [r.id for r in scenario.runs if r.workflow == wf and r.id not in publishers]
        filters: list[dict[str, Any]] = [
            {},
            {"topic": "in"},
            {"topic": "other"},
            {"topic": "out"},
            *({"status": s} for s in EventStatus),
            *({"created_by": run} for run in publishers[:3] + idle[:1]),
            {"topic": "in", "status": EventStatus.PENDING},
        ]
        for given in filters:
            limit = scenario.rng.choice(_LIMITS)
            expected = [
                e.message_id
                for e in reversed(scenario.events[wf])
                if all(getattr(e, name) == value for name, value in given.items())
            ]

            def between(given: dict[str, Any] = given) -> None:
                scenario.publish(wf, given.get("topic"))
                scenario.publish(noise, given.get("topic"))

            pages = _follow(
                lambda given=given, **kw: pager.page_events(wf, **given, **kw),
                limit,
                lambda e: str(e.message_id),
                between,
            )
            _check(pages, expected, limit, f"page_events({wf!r}, {given}) with seed {seed}")

    @pytest.mark.parametrize("seed", _SEEDS[:1])
    def test_run_and_ledger_pages_are_full_and_complete_under_every_filter(
        self, store: Store, seed: int
    ) -> None:
        pager = self.pager(store)
        scenario = self._scenario(store, seed)

        def fresh_runs() -> None:
            scenario.consume(scenario.rng.choice(scenario.workflows))

        def expect(rows: list[ModelRow], workflow: str, status: str | None) -> list[str]:
            return [
                r.id
                for r in reversed(rows)
                if r.workflow == workflow and (status is None or r.status == status)
            ]

        for wf in scenario.workflows:
            for run_status in (None, RunStatus.COMMITTED, RunStatus.FAILED_LOGIC):
                limit = scenario.rng.choice(_LIMITS)
                expected = expect(scenario.runs, wf, run_status and run_status.value)
                pages = _follow(
                    lambda wf=wf, s=run_status, **kw: pager.page_runs(workflow=wf, status=s, **kw),
                    limit,
                    lambda r: str(r.id),
                    fresh_runs,
                )
                _check(pages, expected, limit, f"page_runs({wf!r}, {run_status}) seed {seed}")
            for entry_status in (None, LedgerStatus.APPLIED, LedgerStatus.FAILED):
                limit = scenario.rng.choice(_LIMITS)
                expected = expect(scenario.ledger, wf, entry_status and entry_status.value)
                pages = _follow(
                    lambda wf=wf, s=entry_status, **kw: pager.page_ledger(
                        workflow=wf, status=s, **kw
                    ),
                    limit,
                    lambda e: str(e.id),
                    lambda: scenario.mutate(scenario.rng.choice(scenario.workflows)),
                )
                _check(pages, expected, limit, f"page_ledger({wf!r}, {entry_status}) seed {seed}")
