"""``keep runs RUN``: one run with its durable invocation, attempts and notifications."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from rich.console import Console

from keep_sdk.cli._views import at, print_runs
from keep_sdk.cli.text import line, styled
from keep_sdk.contract.durable import Attempt, Invocation, Notification
from keep_sdk.model import RunRecord
from keep_sdk.stores import Store, SupportsDurable

__all__ = ["RunDetail", "print_run_detail", "run_detail"]


class RunDetail(BaseModel):
    """A run and, when it called a durable operation, the invocation and its history."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    run: RunRecord
    invocation: Invocation | None = None
    attempts: list[Attempt] = []
    notifications: list[Notification] = []


def run_detail(store: Store, run_id: str) -> RunDetail:
    """What `keep runs RUN` shows (`NotFound` for an unknown run)."""
    run = store.get_run(run_id)
    invocation = store.invocation_for_run(run.id) if isinstance(store, SupportsDurable) else None
    if invocation is None or not isinstance(store, SupportsDurable):
        return RunDetail(run=run)
    return RunDetail(
        run=run,
        invocation=invocation,
        attempts=store.list_attempts(invocation.id),
        notifications=store.list_notifications(invocation.id),
    )


def print_run_detail(detail: RunDetail, console: Console) -> None:
    """The run as `keep runs` prints it, then the durable operation and its attempts."""
    print_runs([detail.run], console)
    invocation = detail.invocation
    if invocation is None:
        return
    until = f" until {at(invocation.timeout_at)}" if invocation.timeout_at else ""
    console.print(
        line(
            "  durable ",
            styled(f"ctx.{invocation.connector}.{invocation.operation}", "bold"),
            f" {invocation.status.value}{until}",
        )
    )
    console.print(styled(f"  correlation key {invocation.correlation_key}", "dim"))
    if invocation.external_id:
        console.print(styled(f"  external id {invocation.external_id}", "dim"))
    for attempt in detail.attempts:
        detail_text = "" if attempt.detail is None else f" {attempt.detail}"
        console.print(
            line(
                f"  #{attempt.seq} {at(attempt.at)} {attempt.kind.value}: ",
                styled(attempt.outcome, "bold"),
                styled(detail_text[:200]),
            )
        )
    for note in detail.notifications:
        console.print(
            styled(f"  notification {note.id} ({note.source}) {note.outcome.value}", "dim")
        )
