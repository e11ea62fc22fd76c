"""Issue 16, every kind: after each adversarial run the store holds only strict JSON.

Each producer below breaks one rule of the boundary (values JSON cannot round-trip, lone
surrogates and NUL characters, limits at their edge, memory, console output, messages).
They run through the real runtime on SQLite and on PostgreSQL; afterwards every text
cell of the database is valid UTF-8 and strict JSON where it is JSON, no stored error
names SQL or host internals, and a consumer drains the topic.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from keep_sdk.contract.codec import check
from keep_sdk.model import EventStatus, RunStatus, SandboxLimits
from tests.runtime.harness import fast_policy, make_env

ADVERSARIAL = r"""
const publish = (ctx, id, payload, title) =>
  ctx.publish("email.received", { messageId: id, title: title ?? ("t " + id), payload });

export default Keep.workflow({
  name: "mail-to-sheet",
  topics: { "email.received": {}, "row.created": {} },
  producers: {
    rawInfinity: { EVERY, handler: async (ctx) => {
      await publish(ctx, "inf", { price: JSON.rawJSON("1e999") });
    } },
    hugeInteger: { EVERY, handler: async (ctx) => { await publish(ctx, "big", { n: 2 ** 64 }); } },
    nulPayload: { EVERY, handler: async (ctx) => { await publish(ctx, "nul", { s: "a\0b" }); } },
    nulTitle: { EVERY, handler: async (ctx) => { await publish(ctx, "nult", 1, "x\u0000y"); } },
    nulMessageId: { EVERY, handler: async (ctx) => { await publish(ctx, "m\u0000", 1); } },
    nulState: { EVERY, handler: async (ctx) => ({ cursor: "\u0000" }) },
    nulError: { EVERY, handler: async (ctx) => {
      console.log("nul \u0000 log");
      throw new Error("bad \u0000 thing");
    } },
    surrogateKey: { EVERY, handler: async (ctx) => { await publish(ctx, "sk", { "\uD83D": 1 }); } },
    outOfMemory: { EVERY, handler: async (ctx) => {
      const a = [];
      for (;;) a.push([a.length, {}]);
    } },
    regexpMemory: { EVERY, handler: async (ctx) => {
      const s = "a".repeat(4_000_000);
      return { n: /(a|a)*b?(?:(a)*)*$/.exec(s + "c") ? 1 : 0 };
    } },
    logFlood: { EVERY, handler: async (ctx) => { for (;;) console.log("é".repeat(4000)); } },
    hugeMessage: { EVERY, handler: async (ctx) => { throw new Error("m".repeat(900000)); } },
    good: { EVERY, handler: async (ctx) => {
      await publish(ctx, "g1", { n: Number.MAX_SAFE_INTEGER, s: "\u{1F600} \u2028" });
      return { cursor: "ok" };
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
""".replace("EVERY", 'schedule: { interval: "5m" }')

EXPECTED = {
    "rawInfinity": (RunStatus.FAILED_LOGIC, "not a function (at mail-to-sheet@v1:"),
    "hugeInteger": (RunStatus.FAILED_LOGIC, "`event.payload.n`"),
    "nulPayload": (RunStatus.COMMITTED, None),
    "nulTitle": (RunStatus.FAILED_LOGIC, "`title`: Value error, contains a NUL character"),
    "nulMessageId": (RunStatus.FAILED_LOGIC, "`messageId`: Value error, contains a NUL character"),
    "nulState": (RunStatus.COMMITTED, None),
    "nulError": (RunStatus.FAILED_LOGIC, "bad"),
    "surrogateKey": (RunStatus.FAILED_LOGIC, "lone UTF-16 surrogate"),
    "outOfMemory": (RunStatus.FAILED_LOGIC, "memory"),
    "regexpMemory": (RunStatus.FAILED_LOGIC, "memory"),
    "logFlood": (RunStatus.FAILED_LOGIC, "max_log_bytes"),
    "hugeMessage": (RunStatus.FAILED_LOGIC, "[truncated]"),
    "good": (RunStatus.COMMITTED, None),
}
INTERNALS = ("INSERT", "SELECT", "UPDATE ", "psycopg", "sqlalchemy", "Traceback", "[SQL")


def _strict(value: str) -> None:
    def refuse(token: str) -> None:
        raise AssertionError(f"{token} stored")

    try:
        parsed = json.loads(value, parse_constant=refuse)
    except ValueError:
        return
    check(parsed, root="cell", max_bytes=2**40, max_depth=10_000)


def _every_text_cell(url: str) -> list[str]:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            meta = sa.MetaData()
            meta.reflect(connection)
            cells: list[str] = []
            for table in meta.sorted_tables:
                for row in connection.execute(table.select()):
                    for cell in row:
                        if isinstance(cell, dict | list):
                            cell = json.dumps(cell, allow_nan=True)
                        if isinstance(cell, str):
                            cells.append(cell)
            return cells
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'keep.db'}"
    url: str = request.getfixturevalue("fresh_postgres_url")
    return url


def test_every_kind_leaves_the_store_strict_and_every_topic_peekable(store_url: str) -> None:
    limits = SandboxLimits(
        cpu_time_s=2.0, wall_time_s=5.0, memory_bytes=16 * 1024 * 1024, max_log_bytes=64 * 1024
    )
    env = make_env(store_url, source=ADVERSARIAL, policy=fast_policy(sandbox=limits))
    try:
        for name, (status, needle) in EXPECTED.items():
            run = env.runtime.run_producer("mail-to-sheet", name)
            assert run.status is status, (name, run.status, run.error)
            if needle is not None:
                assert run.error is not None, name
                assert needle in run.error, (name, run.error)
            if run.error is not None:
                assert len(run.error) <= 2_200, name
                assert not any(word in run.error for word in INTERNALS), (name, run.error)
                assert "nests too deeply" not in run.error, (name, run.error)

        events = env.store.list_events("mail-to-sheet", topic="email.received")
        assert sorted(e.message_id for e in events) == ["g1", "nul"]
        nul = next(e for e in events if e.message_id == "nul")
        assert nul.payload == {"s": "a\x00b"}
        assert env.store.get_handler("mail-to-sheet", "nulState").state == {"cursor": "\x00"}

        for _ in range(len(events) + 1):
            run = env.runtime.run_consumer("mail-to-sheet", "drain")
            assert run.status is RunStatus.COMMITTED, run.error
        statuses = {e.message_id: e.status for e in env.store.list_events("mail-to-sheet")}
        assert set(statuses.values()) == {EventStatus.CONSUMED}

        for cell in _every_text_cell(store_url):
            cell.encode("utf-8")
            _strict(cell)
    finally:
        env.store.close()
