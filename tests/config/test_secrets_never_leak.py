"""A secret planted in the environment never reaches the store, a log, or any CLI output.

Workflows succeed and fail through an HTTP API (a real service on 127.0.0.1)
and a SQL database (a real SQLite file), configured in keep.toml with the
secret as a reference; then every table of the store and every output is searched.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from keep_sdk.cli import cli
from tests.config.conftest import TOKEN

WORKFLOW = """
export default Keep.workflow({
  name: "contacts",
  topics: { "contact.seen": {} },
  producers: {
    poll: {
      schedule: { interval: "5m" },
      handler: async (ctx, state) => {
        const echo = await ctx.crm.echoAuth({});
        const contact = await ctx.crm.getContact({ id: "c1" });
        await ctx.publish("contact.seen", {
          messageId: "c1",
          title: `Saw ${contact.name} with ${echo.youSent}`,
          payload: { name: contact.name, echo: echo.youSent },
        });
        return {};
      },
    },
  },
  consumers: {
    store: Keep.consumer({
      subscribe: ["contact.seen"],
      async prepare(ctx, state) {
        const [seen] = await ctx.peek("contact.seen", { limit: 1 });
        if (!seen) return { reservations: [], data: {} };
        return {
          reservations: [{ topic: "contact.seen", ids: [seen.messageId] }],
          data: { id: seen.messageId, name: seen.payload.name },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.orders.createOrder({ id: prepared.data.id, customer: prepared.data.name });
      },
      async next(ctx, prepared, mutationResult) {},
    }),
    annotate: Keep.consumer({
      subscribe: ["contact.seen"],
      async prepare(ctx, state) {
        const [seen] = await ctx.peek("contact.seen", { limit: 1 });
        if (!seen) return { reservations: [], data: {} };
        return { reservations: [{ topic: "contact.seen", ids: [seen.messageId] }], data: {} };
      },
      async mutate(ctx, prepared) {
        await ctx.crm.addNote({ text: "" });
      },
      async next(ctx, prepared, mutationResult) {},
    }),
  },
});
"""

CONFIG = """
[connectors.crm]
type = "http"
base_url = "{url}"
headers = {{ Authorization = "Bearer ${{CRM_TOKEN}}" }}

[connectors.crm.operations.getContact]
kind = "read_by_id"
path = "/contacts/{{id}}"
arguments = {{ properties = {{ id = {{ type = "string" }} }}, required = ["id"] }}

[connectors.crm.operations.echoAuth]
kind = "read"
path = "/echo-auth"

[connectors.crm.operations.addNote]
kind = "mutation"
method = "POST"
path = "/notes"
arguments = {{ properties = {{ text = {{ type = "string" }} }}, required = ["text"] }}
reconcile = {{ path = "/notes/by-key/{{idempotencyKey}}" }}

[connectors.orders]
type = "sql"
url = "sqlite:///{db}?token=${{CRM_TOKEN}}"

[connectors.orders.operations.createOrder]
kind = "mutation"
sql = "INSERT INTO orders (id, customer, idem_key) VALUES (:id, :customer, :idempotency_key)"
arguments = {{ properties = {{ id = {{ type = "string" }}, customer = {{ type = "string" }} }}, required = ["id", "customer"] }}
"""


def test_a_planted_secret_appears_nowhere(service, tmp_path: Path, caplog) -> None:
    service.state.contacts["c1"] = {"name": "Ada"}
    db = tmp_path / "orders.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, customer TEXT, idem_key TEXT)")
    config = tmp_path / "keep.toml"
    config.write_text(CONFIG.format(url=service.url, db=db))
    script = tmp_path / "contacts.js"
    script.write_text(WORKFLOW)
    store_path = tmp_path / "store" / "keep.db"
    store = f"sqlite:///{store_path}"
    env = {"KEEP_CONFIG": str(config), "CRM_TOKEN": TOKEN}
    runner = CliRunner()
    outputs = []
    caplog.set_level(logging.DEBUG)

    def keep(*args: str) -> str:
        done = runner.invoke(cli, list(args), env=env, terminal_width=80)
        outputs.append(done.output + (done.stderr if done.stderr_bytes else ""))
        return done.output

    grants = ("--grant", "crm.read", "--grant", "crm.write", "--grant", "orders.write")
    keep("run", str(script), "--store", store, *grants, "--until-idle", "--isolation", "in-process")
    status = json.loads(keep("status", "--store", store, "--json"))
    for command in ("runs", "events", "ledger"):
        keep(command, "--store", store, "--json")
        keep(command, "--store", store)
    keep("status", "--store", store)
    keep("connectors")
    keep("connectors", "--format", "markdown")
    keep("connectors", "--format", "json")
    keep("config", "--json")
    keep("config")

    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT id, customer FROM orders").fetchall() == [("c1", "Ada")]
    ledger = json.loads(keep("ledger", "--store", store, "--json"))
    statuses = sorted(entry["status"] for entry in ledger)
    assert statuses == ["applied", "failed"], ledger
    assert status["workflows"]
    with sqlite3.connect(store_path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        assert len(tables) > 3
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                assert TOKEN not in repr(row), f"the secret leaked into table {table}"
        dump = "\n".join(conn.iterdump())
    assert "***" in dump
    for output in outputs:
        assert TOKEN not in output
    assert any("crm.addNote" in o for o in outputs)
    assert TOKEN not in caplog.text
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix not in (".toml",):
            assert TOKEN.encode() not in path.read_bytes(), path


def test_a_secret_in_a_log_message_is_masked(caplog) -> None:
    from keep_sdk.config import install_log_redaction
    from keep_sdk.connectors.secrets import Secret

    install_log_redaction([Secret("log-s3cret-abcdef")])
    caplog.set_level(logging.INFO)
    logging.getLogger("keep_sdk.test").info("calling with %s", "log-s3cret-abcdef")
    try:
        raise ValueError("failed with log-s3cret-abcdef")
    except ValueError:
        logging.getLogger("some.library").exception("boom")
    assert "log-s3cret-abcdef" not in caplog.text
    assert "calling with ***" in caplog.text
    assert "failed with ***" in caplog.text
