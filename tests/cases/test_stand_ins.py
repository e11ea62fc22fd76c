"""In a case, a connector that is not a double is a recording stand-in: no request reaches
its service, unless the case lists it in `live`.

Real components: a keep.toml ``http`` connector pointed at an HTTP server on 127.0.0.1
that counts its requests, and the notes MCP server over stdio behind a proxy that logs
every JSON-RPC method it receives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from keep_sdk.cases import run_case_file
from keep_sdk.config import KeepConfig, load_config
from keep_sdk.plugins import KeepPlugins
from tests.connectors.mcp.servers import SERVER

ROOT = Path(__file__).resolve().parents[2]
PROXY = Path(__file__).with_name("mcp_proxy.py")

SCRIPT = """
export default Keep.workflow({
  name: "signup",
  topics: { "person.joined": {}, "contact.saved": {} },
  consumers: {
    save: Keep.consumer({
      subscribe: ["person.joined"],
      publishes: ["contact.saved"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("person.joined", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        const found = await ctx.crm.findContact({ email: e.payload.email });
        const notes = await ctx.notes.searchNotes({ query: e.payload.email });
        return {
          reservations: [{ topic: "person.joined", ids: [e.messageId] }],
          data: { email: e.payload.email, known: found.known, notes: notes.notes.length },
          ui: { title: `Save ${e.payload.email}` },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.crm.createContact({ email: prepared.data.email });
      },
      async next(ctx, prepared, mutationResult) {
        if (mutationResult.status === "applied") {
          await ctx.publish("contact.saved", {
            messageId: `saved:${prepared.data.email}`,
            title: `Saved ${prepared.data.email}`,
            payload: { id: mutationResult.result.id, known: prepared.data.known,
                       notes: prepared.data.notes, email: prepared.data.email },
          });
        }
        return {};
      },
    }),
    note: Keep.consumer({
      subscribe: ["contact.saved"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("contact.saved", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return {
          reservations: [{ topic: "contact.saved", ids: [e.messageId] }],
          data: { text: `saved ${e.payload.email}` },
          ui: { title: "Note it" },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.notes.addNote({ text: prepared.data.text });
      },
      async next(ctx, prepared, mutationResult) {
        return {};
      },
    }),
  },
});
"""

CASES = """
workflow: signup.js
connectors:
  crm:
    answers:
      findContact:
        - when: {email: ana@example.com}
          result: {known: true}
        - result: {known: false}
    results:
      createContact: {id: c-7}
  notes:
    answers:
      searchNotes: {notes: [{id: n0, text: old}]}
    results:
      addNote: {id: n-1}
cases:
  - name: reads and mutations are answered from the seed
    steps:
      - publish: {topic: person.joined, messageId: p1, title: Ana,
                  payload: {email: ana@example.com}}
      - publish: {topic: person.joined, messageId: p2, title: Bo,
                  payload: {email: bo@example.com}}
      - run: {}
    expect:
      mutations:
        - {call: crm.createContact, arguments: {email: ana@example.com}, status: applied}
        - {call: crm.createContact, arguments: {email: bo@example.com}, status: applied}
        - {call: notes.addNote, arguments: {text: saved ana@example.com}, status: applied}
        - {call: notes.addNote, arguments: {text: saved bo@example.com}, status: applied}
      publishes:
        - {topic: contact.saved, payload: {id: c-7, known: true, notes: 1}}
        - {topic: contact.saved, payload: {id: c-7, known: false, notes: 1}}
      effects: {crm.createContact: 2, notes.addNote: 2}
  - name: a read with no answer
    connectors:
      crm:
        results: {createContact: {id: c-8}}
    steps:
      - publish: {topic: person.joined, messageId: p1, title: Ana,
                  payload: {email: ana@example.com}}
      - run: {}
  - name: the real crm
    live: [crm]
    steps:
      - publish: {topic: person.joined, messageId: p1, title: Ana,
                  payload: {email: ana@example.com}}
      - run: {}
    expect:
      publishes:
        - {topic: contact.saved, payload: {id: server-1, known: true}}
      effects: {notes.addNote: 1}
"""


@dataclass
class Crm:
    """An HTTP CRM on 127.0.0.1 that counts the requests it receives."""

    url: str
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def crm() -> Iterator[Crm]:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: dict[str, Any]) -> None:
            seen.append(f"{self.command} {self.path}")
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer({"known": True})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._answer({"id": "server-1"})

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Crm(f"http://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        server.server_close()


def _toml(crm_url: str, log: Path, state: Path) -> str:
    proxy = [str(PROXY), str(log), str(SERVER), str(state)]
    return f"""
[connectors.crm]
type = "http"
base_url = "{crm_url}"
[connectors.crm.operations.findContact]
kind = "read"
method = "GET"
path = "/contacts/{{email}}"
arguments = {{ properties = {{ email = {{ type = "string" }} }}, required = ["email"] }}
[connectors.crm.operations.createContact]
kind = "mutation"
method = "POST"
path = "/contacts"
arguments = {{ properties = {{ email = {{ type = "string" }} }}, required = ["email"] }}

[connectors.notes]
type = "mcp"
command = {json.dumps(sys.executable)}
args = {json.dumps(proxy)}
call_timeout_s = 20.0
"""


@dataclass
class Setup:
    folder: Path
    config: KeepConfig
    log: Path
    state: Path

    def methods(self) -> list[str]:
        return self.log.read_text().split() if self.log.exists() else []


@pytest.fixture
def setup(tmp_path: Path, crm: Crm) -> Setup:
    log, state = tmp_path / "mcp.log", tmp_path / "notes.json"
    (tmp_path / "keep.toml").write_text(_toml(crm.url, log, state))
    (tmp_path / "signup.js").write_text(SCRIPT)
    (tmp_path / "signup.keep.yaml").write_text(CASES)
    plugins = KeepPlugins(load_entry_points=False)
    config = load_config(tmp_path / "keep.toml", types=plugins.connector_types())
    return Setup(tmp_path, config, log, state)


def _run(setup: Setup, name: str) -> Any:
    [result] = run_case_file(
        setup.folder / "signup.keep.yaml",
        [name],
        plugins=KeepPlugins(load_entry_points=False),
        config=setup.config,
    )
    return result


def test_a_case_reads_and_mutates_without_reaching_either_service(setup: Setup, crm: Crm) -> None:
    result = _run(setup, "reads and mutations are answered from the seed")
    assert result.ok, result.report()
    assert crm.requests == []
    assert "tools/list" in setup.methods()
    assert "tools/call" not in setup.methods()
    assert not setup.state.exists()


def test_a_read_with_no_seeded_answer_fails_the_case_and_says_what_to_add(
    setup: Setup, crm: Crm
) -> None:
    result = _run(setup, "a read with no answer")
    assert not result.ok
    assert (
        "no answer seeded for crm.findContact in case 'a read with no answer'; "
        "add connectors: {crm: {answers: {findContact: ...}}}"
    ) in result.report()
    assert crm.requests == []
    assert "tools/call" not in setup.methods()


def test_a_live_connector_calls_its_service(setup: Setup, crm: Crm) -> None:
    result = _run(setup, "the real crm")
    assert result.ok, result.report()
    assert crm.requests == ["GET /contacts/ana%40example.com", "POST /contacts"]
    assert "tools/call" not in setup.methods()


def test_keep_test_honours_config_and_never_builds_an_unused_down_server(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "config"
    elsewhere.mkdir()
    (elsewhere / "keep.toml").write_text(
        '[connectors.ghost]\ntype = "mcp"\ncommand = "/nonexistent/mcp-server"\n'
    )
    work = tmp_path / "work"
    work.mkdir()
    (work / "post.js").write_text(
        """
export default Keep.workflow({
  name: "post",
  topics: { "said": {} },
  consumers: {
    post: Keep.consumer({
      subscribe: ["said"],
      async prepare(ctx, state) {
        const [e] = await ctx.peek("said", { limit: 1 });
        if (!e) return { reservations: [], data: {} };
        return { reservations: [{ topic: "said", ids: [e.messageId] }],
                 data: { text: e.payload.text }, ui: { title: "Post" } };
      },
      async mutate(ctx, prepared) {
        await ctx.slack.postMessage({ channel: "#general", text: prepared.data.text });
      },
      async next(ctx, prepared, mutationResult) { return {}; },
    }),
  },
});
"""
    )
    (work / "post.keep.yaml").write_text(
        """
workflow: post.js
connectors:
  slack: {channels: {"#general": []}}
cases:
  - name: posts
    steps:
      - publish: {topic: said, messageId: s1, title: Hi, payload: {text: hello}}
      - run: {}
    expect:
      messages: {"#general": [hello]}
"""
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KEEP_CONFIG", None)

    def keep_test(*options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "keep_sdk", *options, "test", "post.keep.yaml"],
            capture_output=True,
            text=True,
            cwd=work,
            env=env,
            timeout=300,
            check=False,
        )

    done = keep_test("--config", str(elsewhere / "keep.toml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 0 failed" in done.stdout
    (work / "post.js").write_text((work / "post.js").read_text().replace("slack", "ghost"))
    broken = keep_test("--config", str(elsewhere / "keep.toml"))
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "could not start the MCP server" in broken.stdout
