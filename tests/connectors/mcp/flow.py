"""A workflow that adds a note through the MCP notes server, and a runtime around it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.mcp import McpConnector, build
from keep_sdk.model import BackoffPolicy, HostPolicy, RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Publication, Store
from tests.connectors.mcp.servers import stdio_settings

NOTES_FLOW = """
export default Keep.workflow({
  name: "notes-flow",
  topics: { "note.requested": {}, "note.added": {} },
  producers: {
    count: {
      schedule: { interval: "5m" },
      handler: async (ctx, state) => {
        const found = await ctx.notes.searchNotes({ query: "" });
        return { seen: found.notes.length };
      },
    },
  },
  consumers: {
    addNote: Keep.consumer({
      subscribe: ["note.requested"],
      publishes: ["note.added"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("note.requested", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return {
          reservations: [{ topic: "note.requested", ids: [e.messageId] }],
          data: { id: e.messageId, text: e.payload.text },
          ui: { title: `Add note ${e.payload.text}` },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.notes.addNote({ text: prepared.data.text });
      },
      async next(ctx, prepared, mutationResult) {
        if (mutationResult.status === "applied") {
          await ctx.publish("note.added", {
            messageId: `added:${prepared.data.id}`,
            title: `Note ${mutationResult.result.id} added`,
            payload: mutationResult.result,
          });
        }
        return { last: mutationResult.status };
      },
    }),
  },
});
"""

POLICY = HostPolicy(
    reconcile_backoff=BackoffPolicy(base_s=0.001, cap_s=0.001, jitter=0.0),
    backoff=BackoffPolicy(base_s=0.001, cap_s=0.001, jitter=0.0),
    mutation_timeout_s=20.0,
)


def notes_connector(state: Path, variant: str = "base") -> McpConnector:
    return build(
        "notes",
        stdio_settings(state, variant, reconcile_tool="find_by_key", call_timeout_s=10.0),
    )


def runtime(store: Store, connector: McpConnector, **options: Any) -> Runtime:
    return Runtime(
        store,
        ConnectorSet([connector]),
        load_workflow=KeepPlugins(load_entry_points=False).load_workflow,
        policy=POLICY,
        **{"isolation": InProcessIsolation(), **options},
    )


def request_note(store: Store, message_id: str, text: str) -> None:
    store.publish(
        "notes-flow",
        Publication(
            topic="note.requested",
            message_id=message_id,
            title=f"Note {message_id}",
            payload={"text": text},
        ),
    )


def settle(rt: Runtime) -> None:
    """What the scheduler does after a restart, until nothing is left to do."""
    rt.recover()
    for _ in range(10):
        for entry in rt.store.due_reconciliations(None):
            rt.reconcile(entry.id)
        for paused in rt.store.list_runs(status=RunStatus.PAUSED_TRANSIENT):
            rt.resume(paused.id)
        if not rt.store.pending_events("notes-flow", "note.requested", limit=1):
            return
        rt.run_consumer("notes-flow", "addNote")
