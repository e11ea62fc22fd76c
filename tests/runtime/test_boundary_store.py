"""Issue 16: after adversarial runs the store holds only strict JSON and every topic peeks.

Runs a workflow whose producers try each poison value of the issue through the real
runtime on a SQLite store, in both isolations, then reads every text cell of the
database and drains the topic with a consumer.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from keep_sdk.contract.codec import check
from keep_sdk.model import EventStatus, RunStatus
from keep_sdk.sandbox import InProcessIsolation, ProcessIsolation
from tests.runtime.harness import make_env

POISON = """
const big = (n) => '日本語'.repeat(n);
const deep = (n) => { let v = 1; for (let i = 0; i < n; i++) v = [v]; return v; };
const publish = (ctx, id, payload) =>
  ctx.publish("email.received", { messageId: id, title: "t " + id, payload });

export default Keep.workflow({
  name: "mail-to-sheet",
  topics: { "email.received": {}, "row.created": {} },
  producers: {
    surrogatePayload: { schedule: { interval: "5m" },
      handler: async (ctx) => { await publish(ctx, "s", { text: "a\\uD800" }); } },
    unsafeInteger: { schedule: { interval: "5m" },
      handler: async (ctx) => { await publish(ctx, "i", { n: 2 ** 53 }); } },
    tooDeep: { schedule: { interval: "5m" },
      handler: async (ctx) => { await publish(ctx, "d", deep(63)); } },
    surrogateError: { schedule: { interval: "5m" },
      handler: async (ctx) => { throw new Error("\\uD800".repeat(450000)); } },
    surrogateLogAndState: { schedule: { interval: "5m" },
      handler: async (ctx) => { console.log("log \\uDC00"); return { cursor: "\\uDFFF" }; } },
    tooManyBytes: { schedule: { interval: "5m" },
      handler: async (ctx) => {
        for (let i = 0; i < 40; i++) await publish(ctx, "b" + i, big(50000));
      } },
    good: { schedule: { interval: "5m" },
      handler: async (ctx) => {
        await publish(ctx, "g1", { n: Number.MAX_SAFE_INTEGER, s: "\\u{1F600}" });
        await publish(ctx, "g2", big(110000));
        await publish(ctx, "g3", deep(62));
        return { cursor: "\\u{1F600}" };
      } },
  },
  consumers: {
    drain: Keep.consumer({
      subscribe: ["email.received"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("email.received", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return { reservations: [{ topic: "email.received", ids: [e.messageId] }],
                 data: { id: e.messageId } };
      },
      async mutate(ctx, prepared) {},
      async next(ctx, prepared) { return { last: prepared.data.id ?? null }; },
    }),
  },
});
"""

_REJECTED = ("surrogatePayload", "unsafeInteger", "tooDeep", "surrogateError")


def _strict(value: str) -> None:
    def refuse(token: str) -> None:
        raise AssertionError(f"{token} stored")

    try:
        parsed = json.loads(value, parse_constant=refuse)
    except ValueError:
        return
    check(parsed, root="cell", max_bytes=2**40, max_depth=10_000)


def _every_text_cell(path: Path) -> list[str]:
    connection = sqlite3.connect(path)
    try:
        tables = [
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        cells = []
        for table in tables:
            for row in connection.execute(f'SELECT * FROM "{table}"'):
                cells.extend(cell for cell in row if isinstance(cell, str))
        return cells
    finally:
        connection.close()


@pytest.mark.parametrize("isolation", ["in_process", "process"])
def test_poison_never_reaches_the_store_and_every_topic_still_peeks(
    tmp_path: Path, isolation: str
) -> None:
    path = tmp_path / "keep.db"
    env = make_env(f"sqlite:///{path}", source=POISON)
    env.runtime.isolation = ProcessIsolation() if isolation == "process" else InProcessIsolation()
    try:
        runs = {
            name: env.runtime.run_producer("mail-to-sheet", name)
            for name in (*_REJECTED, "surrogateLogAndState", "tooManyBytes", "good")
        }
        for name in (*_REJECTED, "surrogateLogAndState"):
            assert runs[name].status is RunStatus.FAILED_LOGIC, (name, runs[name].error)
            assert runs[name].error is not None
            assert len(runs[name].error) <= 2_200
        assert "`state.cursor`" in (runs["surrogateLogAndState"].error or "")
        assert runs["tooManyBytes"].status is RunStatus.FAILED_LOGIC
        assert "published_bytes" in (runs["tooManyBytes"].error or "")
        assert runs["good"].status is RunStatus.COMMITTED, runs["good"].error

        events = env.store.list_events("mail-to-sheet", topic="email.received")
        assert sorted(e.message_id for e in events) == ["g1", "g2", "g3"]
        assert env.store.get_handler("mail-to-sheet", "good").state == {"cursor": "\U0001f600"}

        for _ in range(3):
            run = env.runtime.run_consumer("mail-to-sheet", "drain")
            assert run.status is RunStatus.COMMITTED, run.error
        statuses = {e.message_id: e.status for e in env.store.list_events("mail-to-sheet")}
        assert set(statuses.values()) == {EventStatus.CONSUMED}

        for cell in _every_text_cell(path):
            cell.encode("utf-8")
            _strict(cell)
    finally:
        env.runtime.isolation.close()
        env.store.close()
