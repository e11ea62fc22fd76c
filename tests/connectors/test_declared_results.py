"""Result schemas of configured operations: `result` in keep.toml (SQL, HTTP) and an MCP
tool's outputSchema reach the manifest; a real SQLite read returns what it declares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from jsonschema import Draft202012Validator
from mcp.types import Tool

from keep_sdk.config import load_config
from keep_sdk.connectors.mcp.settings import McpSettings
from keep_sdk.connectors.mcp.tools import tool_operations
from keep_sdk.connectors.types import BUILTIN_CONNECTOR_TYPES
from keep_sdk.errors import ConfigurationError

TYPES = {t.name: t for t in BUILTIN_CONNECTOR_TYPES}

CONFIG = """
[connectors.orders]
type = "sql"
url = "sqlite:///{db}"

[connectors.orders.operations.openOrders]
kind = "read"
sql = "SELECT id, customer FROM orders ORDER BY id"
result = {{ type = "array", items = {{ type = "object", required = ["id", "customer"], \
additionalProperties = false, properties = {{ id = {{ type = "string" }}, \
customer = {{ type = "string" }} }} }} }}

[connectors.orders.operations.countOrders]
kind = "read"
sql = "SELECT count(*) AS n FROM orders"
"""


def _config(tmp_path: Path, text: str) -> Path:
    db = tmp_path / "orders.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE orders (id VARCHAR(40) PRIMARY KEY, customer TEXT)"))
        conn.execute(sa.text("INSERT INTO orders VALUES ('o1', 'Ada'), ('o2', 'Grace')"))
    engine.dispose()
    path = tmp_path / "keep.toml"
    path.write_text(text.format(db=db))
    return path


def test_a_declared_sql_result_is_in_the_manifest_and_holds_for_the_real_rows(
    tmp_path: Path,
) -> None:
    [connector] = load_config(_config(tmp_path, CONFIG), types=TYPES).build_connectors()
    try:
        manifest = connector.manifest()
        declared = manifest.operation("openOrders").result
        assert declared is not None
        assert declared["type"] == "array"
        assert manifest.operation("countOrders").result is None
        rows = connector.invoke("openOrders", {})
        assert [r["id"] for r in rows] == ["o1", "o2"]  # type: ignore[index, union-attr]
        assert list(Draft202012Validator(declared).iter_errors(rows)) == []
    finally:
        connector.close()  # type: ignore[attr-defined]


def test_a_result_that_is_not_json_schema_is_refused_naming_the_operation(
    tmp_path: Path,
) -> None:
    bad = CONFIG.replace('result = {{ type = "array"', 'result = {{ type = "arrey"', 1)
    with pytest.raises(ConfigurationError) as caught:
        load_config(_config(tmp_path, bad), types=TYPES).build_connectors()
    message = str(caught.value)
    assert "openOrders" in message
    assert "result" in message
    assert "Traceback" not in message


def _tools(output: dict[str, Any] | None) -> list[Tool]:
    return [
        Tool(
            name="list_notes",
            inputSchema={"type": "object", "properties": {}},
            outputSchema=output,
        ),
        Tool(name="add_note", inputSchema={"type": "object", "properties": {}}),
    ]


def test_an_mcp_tool_output_schema_is_its_declared_result() -> None:
    output = {
        "type": "object",
        "properties": {"notes": {"type": "array", "items": {"type": "string"}}},
        "required": ["notes"],
    }
    settings = McpSettings(command="notes-server")
    operations = tool_operations("notes", settings, _tools(output), lambda tool: lambda: None)
    assert operations["listNotes"].manifest().result == output
    assert operations["addNote"].manifest().result is None


def test_an_invalid_mcp_output_schema_declares_nothing() -> None:
    settings = McpSettings(command="notes-server")
    tools = _tools({"type": "object", "properties": {"notes": {"type": 7}}})
    operations = tool_operations("notes", settings, tools, lambda tool: lambda: None)
    assert operations["listNotes"].manifest().result is None
