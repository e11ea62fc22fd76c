"""The real ``keep`` command in an 80-column terminal, and a consumer-only workflow."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from keep_sdk.cli import cli

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo" / "invoices.js"
SAMPLE = ROOT / "fixtures" / "workflows" / "demo" / "sample-data.json"
ALL_GRANTS = ("--grant", "gmail.read", "--grant", "sheets.write", "--grant", "slack.write")

BATCHES = """
export default Keep.workflow({
  name: "batches",
  topics: { "ticket.closed": {} },
  consumers: {
    postBatch: Keep.consumer({
      subscribe: ["ticket.closed"],
      async prepare(ctx, state) {
        const tickets = await ctx.peek("ticket.closed", { limit: 3 });
        if (tickets.length === 0) return { reservations: [], data: {} };
        const oldest = Date.parse(tickets[0].payload.closedAt);
        if (tickets.length < 3 && Date.now() < oldest + 10 * 60 * 1000) {
          return {
            reservations: [], data: {},
            wakeAt: new Date(oldest + 10 * 60 * 1000).toISOString(),
          };
        }
        return {
          reservations: [{ topic: "ticket.closed", ids: tickets.map((t) => t.messageId) }],
          data: { text: `${tickets.length} tickets closed` },
          ui: { title: `Post a batch of ${tickets.length} closed tickets` },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.slack.postMessage({ channel: "#ops", text: prepared.data.text });
      },
      async next(ctx, prepared, mutationResult) {},
    }),
  },
});
"""
"""A consumer-only workflow: it waits for three tickets, or ten minutes after the first."""


@dataclass(frozen=True)
class Result:
    """What one command did."""

    code: int
    out: str
    err: str


def keep(*args: str) -> Result:
    """Run ``keep ARGS`` as a user would in an 80-column terminal."""
    result = CliRunner(env={"COLUMNS": "80", "LINES": "40"}).invoke(cli, list(args))
    return Result(result.exit_code, result.stdout, result.stderr)


def run_demo(store: str, *extra: str) -> Result:
    """``keep run`` of the demo on `store`, seeded, until idle, in this process."""
    return keep(
        "run", str(DEMO), "--store", store, "--seed", str(SAMPLE),
        "--until-idle", "--isolation", "in-process", *extra,
    )  # fmt: skip
