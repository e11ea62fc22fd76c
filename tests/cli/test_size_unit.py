"""Issue 17, item 9: the size limit counts UTF-8 bytes of JSON, never JSON escapes.

200,000 "é" are 400,000 bytes, well within the 1 MiB value limit: a script may
publish them and ``keep publish`` accepts them, and a consumer peeks them back. An
event over the limit is refused in both, with the limit in bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from keep_sdk.stores import open_store
from tests.cli.terminal import keep

SCRIPT = """
export default Keep.workflow({
  name: "accents",
  topics: { "text.received": {} },
  producers: {
    write: {
      schedule: { interval: "1h" },
      handler: async (ctx) => {
        await ctx.publish("text.received", {
          messageId: "from-script-REPEAT", title: "Accents", payload: { text: "é".repeat(REPEAT) },
        });
      },
    },
  },
  consumers: {
    read: Keep.consumer({
      subscribe: ["text.received"],
      async prepare(ctx, state) {
        const events = await ctx.peek("text.received", { limit: 5 });
        return {
          reservations: events.length
            ? [{ topic: "text.received", ids: events.map((e) => e.messageId) }] : [],
          data: { lengths: events.map((e) => e.payload.text.length) },
        };
      },
      async mutate(ctx, prepared) {},
      async next(ctx, prepared) { return { lengths: prepared.data.lengths }; },
    }),
  },
});
"""


def _run(tmp_path: Path, store: str, repeat: int) -> dict[str, object]:
    script = tmp_path / "accents.js"
    script.write_text(SCRIPT.replace("REPEAT", str(repeat)))
    done = keep("run", str(script), "--store", store, "--until-idle", "--json",
                "--isolation", "in-process")  # fmt: skip
    document: dict[str, object] = json.loads(done.out)
    return document


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'keep.db'}"


def test_200000_accented_characters_are_published_and_peeked(tmp_path: Path, store: str) -> None:
    _run(tmp_path, store, 1)
    payload = json.dumps({"text": "é" * 200_000})
    done = keep("publish", "text.received", "--message-id", "from-cli", "--title", "Accents",
                "--payload", payload, "--store", store)  # fmt: skip
    assert done.code == 0, done.err
    _run(tmp_path, store, 200_000)
    opened = open_store(store)
    try:
        events = {e.message_id: e for e in opened.list_events("accents")}
        peeked = opened.get_handler("accents", "read").state
    finally:
        opened.close()
    for message_id in ("from-cli", "from-script-200000"):
        assert events[message_id].payload == {"text": "é" * 200_000}
        assert events[message_id].status.value == "consumed"
    assert isinstance(peeked, dict)
    assert 200_000 in peeked["lengths"]


def test_an_event_over_the_limit_is_refused_in_bytes_by_keep_publish(
    tmp_path: Path, store: str
) -> None:
    _run(tmp_path, store, 1)
    payload = json.dumps({"text": "é" * 600_000})
    done = keep("publish", "text.received", "--message-id", "big", "--title", "Big",
                "--payload", payload, "--store", store)  # fmt: skip
    assert done.code == 2
    assert "bytes of UTF-8 JSON" in done.err
    assert "characters" not in done.err
    assert "Traceback" not in done.err
    opened = open_store(store)
    try:
        assert "big" not in [e.message_id for e in opened.list_events("accents")]
    finally:
        opened.close()


def test_an_event_over_the_limit_is_refused_in_bytes_by_ctx_publish(
    tmp_path: Path, store: str
) -> None:
    document = _run(tmp_path, store, 600_000)
    status = document["status"]
    assert isinstance(status, dict)
    [workflow] = status["workflows"]
    assert workflow["events"] == {}
    runs = json.loads(keep("runs", "--store", store, "--json").out)
    [failed] = [r for r in runs if r["handler"] == "write"]
    assert failed["status"] == "failed:logic"
    assert "bytes of JSON" in failed["error"]
    assert "characters" not in failed["error"]
