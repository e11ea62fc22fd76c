"""Frozen execution semantics (002 §3.1): a durable operation's key fields and park timeout
are persisted with each deployed version; a connector upgrade affects new versions only."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import Connector, builtin_manifest, operation
from keep_sdk.contract import DurableDeclaration, Manifest, WorkflowManifest
from keep_sdk.contract.durable import (
    InvocationContext,
    InvocationStatus,
    Pending,
    derive_invocation,
)
from keep_sdk.model import OperationKind, RunStatus
from keep_sdk.plugins import KeepPlugins, hookimpl
from keep_sdk.runtime import PersonActions, Runtime
from keep_sdk.runtime.frozen import durable_semantics
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Publication, Store, SupportsDurable, open_store

T0 = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)

SCRIPT = """
export default Keep.workflow({
  name: "review",
  topics: { "review.needed": {} },
  consumers: {
    askReview: Keep.consumer({
      subscribe: ["review.needed"],
      async prepare(ctx) {
        const [e] = await ctx.peek("review.needed", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return {
          reservations: [{ topic: "review.needed", ids: [e.messageId] }],
          data: { caseId: e.payload.caseId, round: e.payload.round },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.reviews.request({ caseId: prepared.data.caseId, round: prepared.data.round });
      },
      async next(ctx, prepared, mutationResult) {
        return { last: prepared.data.caseId, status: mutationResult.status };
      },
    }),
  },
});
"""


class ReviewArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    case_id: str = Field(alias="caseId")
    round: int


class ReviewService:
    """The external review system both connector versions talk to: one review per token."""

    reviews: ClassVar[dict[str, dict[str, object]]] = {}

    @classmethod
    def open(cls, args: ReviewArgs, invocation: InvocationContext) -> Pending:
        cls.reviews.setdefault(
            invocation.invocation_id,
            {"caseId": args.case_id, "replyTo": invocation.correlation_key},
        )
        return Pending(external_id=invocation.invocation_id)


class ReviewsV1(Connector):
    """Ask a reviewer (version 1 of the plugin)."""

    name = "reviews"

    @operation(
        kind=OperationKind.DURABLE,
        permission="reviews.request",
        args=ReviewArgs,
        key_fields=("caseId",),
        timeout="P14D",
    )
    def request(self, args: ReviewArgs, *, invocation: InvocationContext) -> Pending:
        """Open a review."""
        return ReviewService.open(args, invocation)


class ReviewsV2(Connector):
    """Ask a reviewer (version 2: one review per round, two days to answer)."""

    name = "reviews"

    @operation(
        kind=OperationKind.DURABLE,
        permission="reviews.request",
        args=ReviewArgs,
        key_fields=("caseId", "round"),
        timeout="P2D",
    )
    def request(self, args: ReviewArgs, *, invocation: InvocationContext) -> Pending:
        """Open a review for one round."""
        return ReviewService.open(args, invocation)


class _Plugin:
    def __init__(self, connector: type[Connector]) -> None:
        self.connector = connector

    @hookimpl
    def register_connectors(self) -> Sequence[type[Connector]]:
        return [self.connector]


def _host(store: Store, clock: ManualClock, plugin: type[Connector]) -> Runtime:
    """A host process with `plugin` installed (an upgrade is a new host with the new one)."""
    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(_Plugin(plugin), name=f"reviews-{plugin.__name__}")
    return Runtime(
        store,
        plugins.connector_set(),
        load_workflow=plugins.load_workflow,
        now=clock,
        deterministic=True,
        isolation=InProcessIsolation(),
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def store(store_url: str, clock: ManualClock) -> Iterator[Store]:
    ReviewService.reviews.clear()
    opened = open_store(store_url, clock=clock)
    yield opened
    opened.close()


def _need(store: Store, case_id: str, round_: int = 1) -> None:
    store.publish(
        "review",
        Publication(
            topic="review.needed",
            message_id=f"{case_id}-{round_}",
            title=f"review {case_id}",
            payload={"caseId": case_id, "round": round_},
        ),
    )


def test_a_connector_upgrade_changes_new_versions_only(store: Store, clock: ManualClock) -> None:
    durable = store
    assert isinstance(durable, SupportsDurable)
    old = _host(store, clock, ReviewsV1)
    assert old.deploy(SCRIPT) == 1
    store.grant_permission("review", "reviews.request", actor="test")
    stored = WorkflowManifest.model_validate(store.get_workflow_version("review", 1).manifest)
    assert stored.connectors is not None
    assert stored.connectors.operation("reviews", "request").durable == DurableDeclaration(
        key_fields=["caseId"], timeout="P14D"
    )

    _need(store, "c1")
    parked = old.run_consumer("review", "askReview")
    assert parked.status is RunStatus.PAUSED_WAITING
    first = durable.invocation_for_run(parked.id)
    assert first is not None
    assert first.timeout_at == T0 + 14 * DAY
    assert first.correlation_key == derive_invocation("review", "askReview", parked.id, ("c1",))[1]

    clock.advance(3600)
    upgraded = _host(store, clock, ReviewsV2)
    _need(store, "c2")
    later = upgraded.run_consumer("review", "askReview")
    assert (later.workflow_version, later.status) == (1, RunStatus.PAUSED_WAITING)
    second = durable.invocation_for_run(later.id)
    assert second is not None
    assert second.timeout_at == clock() + 14 * DAY
    assert second.correlation_key == derive_invocation("review", "askReview", later.id, ("c2",))[1]

    clock.advance(3 * 86_400)
    assert upgraded.scan_timeouts() == []
    clock.set(T0 + 14 * DAY + dt.timedelta(seconds=1))
    assert [r.id for r in upgraded.scan_timeouts()] == [parked.id]
    assert durable.get_invocation(second.id).status is InvocationStatus.ACTIVE

    PersonActions(upgraded).start_again(parked.id, actor="person")
    again = durable.get_invocation(first.id)
    assert again.status is InvocationStatus.ACTIVE
    assert again.timeout_at == clock() + 14 * DAY
    assert again.correlation_key == first.correlation_key
    assert store.get_run(parked.id).status is RunStatus.PAUSED_WAITING

    receipt = upgraded.notify(second.correlation_key, {"verdict": "ok"})
    assert receipt.applied
    assert store.get_run(later.id).status is RunStatus.COMMITTED

    assert upgraded.deploy(SCRIPT) == 2
    stored = WorkflowManifest.model_validate(store.get_workflow_version("review", 2).manifest)
    assert stored.connectors is not None
    assert stored.connectors.operation("reviews", "request").durable == DurableDeclaration(
        key_fields=["caseId", "round"], timeout="P2D"
    )
    _need(store, "c3", round_=2)
    newest = upgraded.run_consumer("review", "askReview")
    assert (newest.workflow_version, newest.status) == (2, RunStatus.PAUSED_WAITING)
    third = durable.invocation_for_run(newest.id)
    assert third is not None
    assert third.timeout_at == clock() + 2 * DAY
    assert (
        third.correlation_key
        == (derive_invocation("review", "askReview", newest.id, ("c3", "2"))[1])
    )
    assert upgraded.notify(first.correlation_key, {"verdict": "late but fine"}).applied
    assert store.get_run(parked.id).status is RunStatus.COMMITTED
    assert len(ReviewService.reviews) == 4


def test_a_version_recorded_before_declarations_were_frozen_uses_the_current_ones() -> None:
    live = ReviewsV2.operation("request")
    legacy = ReviewsV1.manifest().model_copy(
        update={
            "operations": [
                op.model_copy(update={"durable": None}) for op in ReviewsV1.manifest().operations
            ]
        }
    )
    assert durable_semantics(None, "reviews", "request", live) == live.declaration
    assert (
        durable_semantics(Manifest(connectors=[legacy]), "reviews", "request", live)
        == live.declaration
    )
    frozen = Manifest(connectors=[ReviewsV1.manifest()])
    assert durable_semantics(frozen, "reviews", "request", live) == DurableDeclaration(
        key_fields=["caseId"], timeout="P14D"
    )


def test_only_durable_operations_carry_a_declaration_in_the_manifest() -> None:
    for connector in builtin_manifest().connectors:
        for op in connector.operations:
            assert (op.durable is not None) is (op.kind is OperationKind.DURABLE), op.name
