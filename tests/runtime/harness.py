"""A workflow, seeded doubles and a runtime on a fake clock, for runtime tests."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.model import BackoffPolicy, EventStatus, HostPolicy, SandboxLimits
from keep_sdk.plugins import KeepPlugins, Observation
from keep_sdk.runtime import PersonActions, Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Publication, Store, open_store

T0 = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)

MAIL_TO_SHEET = """
export default Keep.workflow({
  name: "mail-to-sheet",
  topics: { "email.received": {}, "row.created": {} },
  producers: {
    pollEmail: {
      schedule: { interval: "5m" },
      handler: async (ctx, state) => {
        const emails = await ctx.gmail.search({ after: state?.cursor });
        for (const e of emails) {
          await ctx.publish("email.received", {
            messageId: e.id,
            title: `Email from ${e.from}: "${e.subject}"`,
            payload: { from: e.from, subject: e.subject },
          });
        }
        return { cursor: emails.length ? emails[emails.length - 1].receivedAt : state?.cursor };
      },
    },
  },
  consumers: {
    appendRow: Keep.consumer({
      subscribe: ["email.received"],
      publishes: ["row.created"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("email.received", { limit: 1 });
        if (!e) return { reservations: [], data: { count: state?.count ?? 0 } };
        return {
          reservations: [{ topic: "email.received", ids: [e.messageId] }],
          data: { id: e.messageId, from: e.payload.from, subject: e.payload.subject,
                  count: state?.count ?? 0 },
          ui: { title: `Add row for ${e.payload.from}` },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.sheets.appendRow({
          spreadsheetId: "reports",
          values: [prepared.data.from, prepared.data.subject],
        });
      },
      async next(ctx, prepared, mutationResult) {
        if (mutationResult.status === "applied") {
          await ctx.publish("row.created", {
            messageId: `row:${prepared.data.id}`,
            title: `Row ${mutationResult.result.rowId} for ${prepared.data.from}`,
            payload: mutationResult.result,
          });
        }
        return { count: prepared.data.count + 1, last: mutationResult.status };
      },
    }),
  },
});
"""

MAIL = {
    "messages": [
        {
            "id": f"m{i}",
            "from": f"sender{i}@example.com",
            "to": "me@example.com",
            "subject": f"Invoice {i}",
            "body": "attached",
            "receivedAt": f"2026-11-20T0{i}:00:00Z",
        }
        for i in range(1, 4)
    ]
}


def fast_policy(**overrides: Any) -> HostPolicy:
    """A policy with small limits and quick backoffs, so failing tests fail fast."""
    values: dict[str, Any] = {
        "sandbox": SandboxLimits(cpu_time_s=2.0, wall_time_s=5.0),
        "backoff": BackoffPolicy(base_s=1.0, cap_s=60.0, jitter=0.0),
        "reconcile_backoff": BackoffPolicy(base_s=10.0, cap_s=60.0, jitter=0.0),
        "reconcile_attempts": 3,
        "mutation_timeout_s": 5.0,
    }
    values.update(overrides)
    return HostPolicy(**values)


@dataclass
class Env:
    """A deployed workflow with its store, doubles, runtime and what observers heard."""

    store: Store
    gmail: Gmail
    sheets: Sheets
    slack: Slack
    runtime: Runtime
    clock: ManualClock
    observed: list[Observation] = field(default_factory=list)

    @property
    def actions(self) -> PersonActions:
        return PersonActions(self.runtime)

    def publish(self, message_id: str, *, topic: str = "email.received", **payload: Any) -> None:
        self.store.publish(
            "mail-to-sheet",
            Publication(
                topic=topic,
                message_id=message_id,
                title=f"Email {message_id}",
                payload={"from": f"{message_id}@example.com", "subject": "Hi", **payload},
            ),
        )

    def statuses(self, topic: str = "email.received") -> dict[str, EventStatus]:
        return {
            e.message_id: e.status for e in self.store.list_events("mail-to-sheet", topic=topic)
        }

    def rows(self) -> list[list[Any]]:
        rows = self.sheets.snapshot()["spreadsheets"]["reports"]["rows"]
        return [r["values"] for r in rows]


def deploy_unvalidated(env: Env, source: str) -> int:
    """Store `source` as a new version without refusing it, as a compromised deploy path
    would: the runtime must still enforce every rule at run time."""
    from keep_sdk.model import HandlerKind
    from keep_sdk.stores import HandlerSpec
    from keep_sdk.validator import validate

    manifest = validate(source).workflow
    assert manifest is not None
    handlers = [HandlerSpec(name=p.name, kind=HandlerKind.PRODUCER) for p in manifest.producers]
    handlers += [
        HandlerSpec(name=c.name, kind=HandlerKind.CONSUMER, subscribe=list(c.subscribe))
        for c in manifest.consumers
    ]
    return env.store.deploy(
        "mail-to-sheet", source, manifest.model_dump(mode="json"), handlers=handlers
    )


def make_env(
    store_url: str,
    *,
    source: str = MAIL_TO_SHEET,
    policy: HostPolicy | None = None,
    grants: tuple[str, ...] = ("gmail.read", "sheets.write", "slack.write"),
    backing: Path | None = None,
) -> Env:
    clock = ManualClock(T0)
    store = open_store(store_url, clock=clock)
    gmail = Gmail(seed=MAIL, backing=backing)
    sheets = Sheets(seed={"spreadsheets": {"reports": {"rows": []}}}, backing=backing)
    slack = Slack(seed={"channels": {"#finance": []}}, backing=backing)
    observed: list[Observation] = []

    class Recorder:
        from keep_sdk import hookimpl

        @hookimpl
        def observe(self, observation: Observation) -> None:
            observed.append(observation)

    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(Recorder(), name="recorder")
    runtime = Runtime(
        store,
        ConnectorSet([gmail, sheets, slack]),
        policy=policy or fast_policy(),
        load_workflow=plugins.load_workflow,
        observe=plugins.notify,
        now=clock,
        deterministic=True,
        isolation=InProcessIsolation(),
    )
    runtime.deploy(source)
    for permission in grants:
        store.grant_permission("mail-to-sheet", permission, actor="test")
    return Env(store, gmail, sheets, slack, runtime, clock, observed)
