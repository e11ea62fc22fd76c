"""`keep mcp` as a subprocess on stdio, driven by the `mcp` SDK's client: the repair loop."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

pytest.importorskip(
    "mcp", reason="keep mcp needs the optional mcp extra: pip install keep-sdk[mcp]"
)

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "fixtures" / "workflows"
READS = {"validate", "connectors", "run_cases", "replay", "diff", "status"}


def _server(cwd: Path, *args: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KEEP_"))}
    env["PYTHONPATH"] = str(ROOT)
    return StdioServerParameters(
        command=sys.executable, args=["-m", "keep_sdk", "mcp", *args], env=env, cwd=str(cwd)
    )


async def _session(cwd: Path, *args: str, steps: Any) -> Any:
    async with (
        stdio_client(_server(cwd, *args)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await steps(session)


def _structured(result: Any, schemas: dict[str, Any], tool: str) -> dict[str, Any]:
    """The tool's structured answer, checked against the output schema it declares."""
    assert not result.isError, result.content
    jsonschema.validate(result.structuredContent, schemas[tool])
    return dict(result.structuredContent)


def _fixed(source: str) -> str:
    return source.replace("apendRow", "appendRow").replace("postMesage", "postMessage")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "repair" / "invoices-broken.js", tmp_path / "invoices.js")
    shutil.copy(FIXTURES / "demo" / "invoices.keep.yaml", tmp_path / "invoices.keep.yaml")
    return tmp_path


def test_a_client_validates_repairs_and_tests_a_broken_workflow(workspace: Path) -> None:
    async def steps(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == READS | {"deploy"}
        for name, tool in tools.items():
            assert tool.inputSchema["type"] == "object"
            assert tool.outputSchema is not None, name
            assert tool.annotations is not None
            assert tool.annotations.readOnlyHint is (name in READS), name
        schemas = {name: tool.outputSchema for name, tool in tools.items()}

        broken = _structured(
            await session.call_tool("validate", {"paths": ["invoices.js"]}), schemas, "validate"
        )
        found = broken["reports"][0]["diagnostics"]
        assert broken["errorCount"] >= 1
        assert {d["rule"] for d in found} == {"unknown-operation"}
        assert all(d["hint"] for d in found)

        failing = _structured(
            await session.call_tool("run_cases", {"case_file": "invoices.keep.yaml"}),
            schemas,
            "run_cases",
        )
        assert not failing["ok"]

        script = workspace / "invoices.js"
        script.write_text(_fixed(script.read_text()))
        clean = _structured(
            await session.call_tool("validate", {"paths": ["invoices.js"]}), schemas, "validate"
        )
        assert clean["errorCount"] == 0
        passing = _structured(
            await session.call_tool("run_cases", {"case_file": "invoices.keep.yaml"}),
            schemas,
            "run_cases",
        )
        assert passing["ok"]
        assert passing["failed"] == 0
        assert passing["passed"] >= 1

        shutil.copy(FIXTURES / "repair" / "invoices-broken.js", workspace / "old.js")
        diff = _structured(
            await session.call_tool("diff", {"old": "old.js", "new": "invoices.js"}),
            schemas,
            "diff",
        )
        assert diff["newPermissions"] == ["sheets.write", "slack.write"]
        listing = _structured(
            await session.call_tool("connectors", {"name": "sheets"}), schemas, "connectors"
        )
        assert [c["name"] for c in listing["connectors"]] == ["sheets"]

        refused = await session.call_tool("deploy", {"script": "invoices.js"})
        assert refused.isError
        assert "--allow-deploy" in refused.content[0].text  # type: ignore[union-attr]
        assert not (workspace / ".keep").exists()

        declarations = await session.read_resource("keep://connectors/keep.d.ts")  # type: ignore[arg-type]
        assert "interface PrepareCtx" in declarations.contents[0].text  # type: ignore[union-attr]
        rule = await session.read_resource("keep://rules/unknown-operation")  # type: ignore[arg-type]
        assert "# unknown-operation" in rule.contents[0].text  # type: ignore[union-attr]

    asyncio.run(_session(workspace, steps=steps))


def test_deploy_when_allowed_deploys_and_grants_nothing(workspace: Path) -> None:
    script = workspace / "invoices.js"
    script.write_text(_fixed(script.read_text()))

    async def steps(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        schemas = {name: tool.outputSchema for name, tool in tools.items()}
        first = _structured(
            await session.call_tool("deploy", {"script": "invoices.js"}), schemas, "deploy"
        )
        assert (first["workflow"], first["version"], first["deployed"]) == ("invoices", 1, True)
        assert first["grants"] == []
        assert set(first["missing"]) == set(first["needed"]) >= {"sheets.write"}
        again = _structured(
            await session.call_tool("deploy", {"script": "invoices.js"}), schemas, "deploy"
        )
        assert (again["version"], again["deployed"]) == (1, False)
        status = _structured(await session.call_tool("status", {}), schemas, "status")
        assert [w["name"] for w in status["workflows"]] == ["invoices"]

    asyncio.run(_session(workspace, "--allow-deploy", steps=steps))
