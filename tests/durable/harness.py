"""A document-request workflow on the approvals double, a runtime on a fake clock."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from keep_sdk.conformance import ManualClock
from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Approvals, Jobs
from keep_sdk.model import BackoffPolicy, HostPolicy
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import PersonActions, Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Publication, Store, SupportsDurable, open_store

T0 = dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)

DOCUMENT_REQUEST = """
export default Keep.workflow({
  name: "document-request",
  topics: { "document.needed": {}, "document.received": {} },
  consumers: {
    requestDocument: Keep.consumer({
      subscribe: ["document.needed"],
      publishes: ["document.received"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("document.needed", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return {
          reservations: [{ topic: "document.needed", ids: [e.messageId] }],
          data: { id: e.messageId, client: e.payload.client, document: e.payload.document,
                  received: state?.received ?? [] },
          ui: { title: `Ask ${e.payload.client} for ${e.payload.document}` },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.approvals.request({
          to: prepared.data.client,
          subject: `Please upload your ${prepared.data.document}`,
        });
      },
      async next(ctx, prepared, mutationResult) {
        if (mutationResult.status !== "applied") return { received: prepared.data.received };
        await ctx.publish("document.received", {
          messageId: prepared.data.id,
          title: `${prepared.data.document} from ${prepared.data.client}`,
          payload: mutationResult.result,
        });
        return { received: [...prepared.data.received, prepared.data.id] };
      },
    }),
  },
});
"""


@dataclass
class DurableEnv:
    store: Store
    approvals: Approvals
    runtime: Runtime
    clock: ManualClock

    @property
    def durable(self) -> SupportsDurable:
        assert isinstance(self.store, SupportsDurable)
        return self.store

    def need(self, message_id: str, client: str = "ann@example.com") -> None:
        self.store.publish(
            "document-request",
            Publication(
                topic="document.needed",
                message_id=message_id,
                title=f"{client} must send a passport",
                payload={"client": client, "document": "passport"},
            ),
        )

    def runtime_actions(self) -> PersonActions:
        return PersonActions(self.runtime)

    def run(self) -> str:
        return self.runtime.run_consumer("document-request", "requestDocument").id


def make_env(store_url: str, *, backing: Path | None = None, deploy: bool = True) -> DurableEnv:
    clock = ManualClock(T0)
    store = open_store(store_url, clock=clock)
    approvals = Approvals(backing=backing)
    plugins = KeepPlugins(load_entry_points=False)
    policy = HostPolicy(backoff=BackoffPolicy(base_s=1, cap_s=1, jitter=0))
    runtime = Runtime(
        store,
        ConnectorSet([approvals]),
        policy=policy,
        load_workflow=plugins.load_workflow,
        now=clock,
        deterministic=True,
        isolation=InProcessIsolation(),
    )
    if deploy:
        runtime.deploy(DOCUMENT_REQUEST)
        store.grant_permission("document-request", "approvals.request", actor="test")
    return DurableEnv(store, approvals, runtime, clock)


REPORT_JOB = """
export default Keep.workflow({
  name: "report-job",
  topics: { "report.requested": {}, "report.ready": {} },
  consumers: {
    runReport: Keep.consumer({
      subscribe: ["report.requested"],
      publishes: ["report.ready"],
      async prepare(ctx) {
        const [e] = await ctx.peek("report.requested", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return {
          reservations: [{ topic: "report.requested", ids: [e.messageId] }],
          data: { id: e.messageId, name: e.payload.name },
          ui: { title: `Run report ${e.payload.name}` },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.jobs.submit({ name: prepared.data.name, input: { id: prepared.data.id } });
      },
      async next(ctx, prepared, mutationResult) {
        await ctx.publish("report.ready", {
          messageId: prepared.data.id,
          title: `Report ${prepared.data.name} is ready`,
          payload: mutationResult.result,
        });
      },
    }),
  },
});
"""


@dataclass
class JobsEnv:
    store: Store
    jobs: Jobs
    runtime: Runtime
    clock: ManualClock

    @property
    def durable(self) -> SupportsDurable:
        assert isinstance(self.store, SupportsDurable)
        return self.store

    def request(self, message_id: str, name: str = "sales") -> None:
        self.store.publish(
            "report-job",
            Publication(
                topic="report.requested",
                message_id=message_id,
                title=f"Report {name} requested",
                payload={"name": name},
            ),
        )


def make_jobs_env(store_url: str, *, pending_polls: int = 2) -> JobsEnv:
    clock = ManualClock(T0)
    store = open_store(store_url, clock=clock)
    jobs = Jobs(seed={"pendingPolls": pending_polls, "failing": ["broken"]})
    plugins = KeepPlugins(load_entry_points=False)
    policy = HostPolicy(backoff=BackoffPolicy(base_s=1, cap_s=1, jitter=0))
    runtime = Runtime(
        store,
        ConnectorSet([jobs]),
        policy=policy,
        load_workflow=plugins.load_workflow,
        now=clock,
        deterministic=True,
        isolation=InProcessIsolation(),
    )
    runtime.deploy(REPORT_JOB)
    store.grant_permission("report-job", "jobs.submit", actor="test")
    return JobsEnv(store, jobs, runtime, clock)
