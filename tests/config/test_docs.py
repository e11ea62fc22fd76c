"""The keep.toml and workflow examples of the configuration and connector pages run as written."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path

from click.testing import CliRunner

from keep_sdk.cli import cli
from keep_sdk.config import load_config
from keep_sdk.connectors.types import BUILTIN_CONNECTOR_TYPES
from tests.config.conftest import TOKEN

DOCS = Path(__file__).parents[2] / "docs"
TYPES = {t.name: t for t in BUILTIN_CONNECTOR_TYPES}


def blocks(page: str, language: str) -> list[str]:
    text = (DOCS / page).read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def run(tmp_path: Path, config: str, script: str, *grants: str, env: dict[str, str]) -> dict:
    (tmp_path / "keep.toml").write_text(config)
    (tmp_path / "flow.js").write_text(script)
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    args = ["--config", str(tmp_path / "keep.toml"), "run", str(tmp_path / "flow.js")]
    args += ["--store", store, "--until-idle", "--isolation", "in-process"]
    for grant in grants:
        args += ["--grant", grant]
    done = CliRunner().invoke(cli, args, env=env)
    assert done.exit_code == 0, done.output + done.stderr
    ledger = CliRunner().invoke(
        cli,
        ["--config", str(tmp_path / "keep.toml"), "ledger", "--store", store, "--json"],
        env=env,
    )
    return {"ledger": json.loads(ledger.output)}


def test_the_configuration_page_examples_load(tmp_path: Path) -> None:
    for block in blocks("configuration.md", "toml"):
        path = tmp_path / "keep.toml"
        path.write_text(block)
        config = load_config(path, types=TYPES, environ={})
        if "[policy" in block:
            assert config.policy_for("leads").sandbox.cpu_time_s == 9
            assert config.policy.sandbox.cpu_time_s == 2
        if "[connectors.orders]" in block:
            orders = config.connectors["orders"].settings
            assert orders.revealed_url() == f"sqlite:///{tmp_path / 'data' / 'orders.db'}"  # type: ignore[attr-defined]
            notes = config.connectors["notes"].settings
            assert (notes.command, notes.cwd) == ("python3", str(tmp_path))  # type: ignore[attr-defined]


def test_the_http_page_config_and_workflow_run_against_a_real_service(service, tmp_path) -> None:
    [config] = blocks("connectors-http.md", "toml")
    [script] = blocks("connectors-http.md", "js")
    config = config.replace("http://127.0.0.1:8080", service.url)
    service.state.contacts["c1"] = {"name": "Ada"}
    result = run(tmp_path, config, script, "crm.read", "crm.notes", env={"CRM_TOKEN": TOKEN})
    [entry] = result["ledger"]
    assert entry["status"] == "applied"
    assert [n["text"] for n in service.state.notes.values()] == ["Welcome Ada"]
    assert service.state.received[-1]["idempotencyKey"] == entry["idempotencyKey"]


def test_the_sql_page_config_and_workflow_run_on_sqlite(tmp_path) -> None:
    [config] = blocks("connectors-sql.md", "toml")
    [script] = blocks("connectors-sql.md", "js")
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE orders (id TEXT PRIMARY KEY, customer TEXT NOT NULL, total NUMERIC, "
            "status TEXT NOT NULL, idem_key TEXT UNIQUE)"
        )
        conn.execute("INSERT INTO orders VALUES ('r1', 'Ada', 12.5, 'requested', NULL)")
    config = config.replace(
        "postgresql+psycopg://app:${DB_PASSWORD}@127.0.0.1/shop",
        f"sqlite:///{db}?x=${{DB_PASSWORD}}",
    )
    result = run(
        tmp_path, config, script, "orders.read", "orders.write", env={"DB_PASSWORD": "pw-123456"}
    )
    [entry] = result["ledger"]
    assert entry["status"] == "applied"
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT id, customer, status, idem_key FROM orders ORDER BY id"
        ).fetchall()
    assert rows == [
        ("r1", "Ada", "requested", None),
        ("r1-confirmed", "Ada", "open", entry["idempotencyKey"]),
    ]


def test_applied_then_dropped_is_reconciled_by_the_ledger_and_happens_once(
    service, tmp_path
) -> None:
    [config] = blocks("connectors-http.md", "toml")
    [script] = blocks("connectors-http.md", "js")
    config = config.replace("http://127.0.0.1:8080", service.url)
    service.state.contacts["c1"] = {"name": "Ada"}
    service.fault("/notes", "drop_after_apply")
    result = run(tmp_path, config, script, "crm.read", "crm.notes", env={"CRM_TOKEN": TOKEN})
    [entry] = result["ledger"]
    assert entry["status"] == "applied"
    assert entry["result"]["noteId"] == "note-1"
    posts = [r for r in service.state.received if r["method"] == "POST"]
    lookups = [r for r in service.state.received if r["path"].startswith("/notes/by-key/")]
    assert len(posts) == 1
    assert len(lookups) == 1
    assert len(service.state.notes) == 1


def test_a_transient_answer_to_a_mutation_is_retried_by_the_host_with_the_same_key(
    service, tmp_path
) -> None:
    [config] = blocks("connectors-http.md", "toml")
    [script] = blocks("connectors-http.md", "js")
    config = config.replace("http://127.0.0.1:8080", service.url)
    service.state.contacts["c1"] = {"name": "Ada"}
    service.fault("/notes", "status", status=503, retry_after="0")
    (tmp_path / "keep.toml").write_text(config + "\n[policy.backoff]\nbase_s = 0.05\ncap_s = 0.1\n")
    (tmp_path / "flow.js").write_text(script)
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    base = ["--config", str(tmp_path / "keep.toml")]
    env = {"CRM_TOKEN": TOKEN}
    args = [*base, "run", str(tmp_path / "flow.js"), "--store", store, "--until-idle"]
    args += ["--isolation", "in-process", "--grant", "crm.read", "--grant", "crm.notes"]
    first = CliRunner().invoke(cli, args, env=env)
    assert "503" in first.output + first.stderr
    time.sleep(0.5)
    again = CliRunner().invoke(cli, args, env=env)
    assert again.exit_code == 0, again.output + again.stderr
    posts = [r for r in service.state.received if r["method"] == "POST"]
    assert len(posts) == 2
    assert posts[0]["idempotencyKey"] == posts[1]["idempotencyKey"]
    assert len(service.state.notes) == 1


def test_keep_call_reaches_a_configured_operation(service, tmp_path) -> None:
    [config] = blocks("connectors-http.md", "toml")
    (tmp_path / "keep.toml").write_text(config.replace("http://127.0.0.1:8080", service.url))
    service.state.contacts["c1"] = {"name": "Ada"}
    done = CliRunner().invoke(
        cli,
        ["--config", str(tmp_path / "keep.toml"), "call", "crm.getContact", '{"id": "c1"}'],
        env={"CRM_TOKEN": TOKEN},
    )
    assert done.exit_code == 0, done.output + done.stderr
    assert json.loads(done.output) == {"name": "Ada"}
    refused = CliRunner().invoke(
        cli,
        ["--config", str(tmp_path / "keep.toml"), "call", "crm.getContact", '{"id": "c9"}'],
        env={"CRM_TOKEN": TOKEN},
    )
    assert refused.exit_code == 1
    assert "answered 404" in refused.stderr
