"""`scripts/demo_local_services.py` runs end to end against its real local services, with
every connector declared in keep.toml and the workflow run by ``keep run``."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_demo_runs_every_service_through_keep_toml_and_reports_what_each_received(
    tmp_path: Path,
) -> None:
    demo = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo_local_services.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    out = demo.stdout
    config = tomllib.loads((tmp_path / "keep.toml").read_text())
    assert {name: c["type"] for name, c in config["connectors"].items()} == {
        "status": "http",
        "tickets": "mcp",
        "mail": "mail",
    }
    assert config["connectors"]["status"]["headers"] == {"Authorization": "Bearer ${STATUS_TOKEN}"}
    assert "ctx.status.listIncidents({})  [read, needs status.read]" in out
    assert "ctx.tickets.openTicket({title, severity})  [mutation, needs tickets.write" in out
    assert "incidents/openTicket: Open a ticket for billing: Invoices delayed: done" in out
    assert 'HTTP API:    ["GET /incidents"]' in out
    assert "MCP tickets: T-1 'billing: Invoices delayed' (high)" in out
    assert "MCP tickets: T-2 'search: Slow queries' (low)" in out
    assert out.count("SMTP:        to oncall@example.com") == 2
    assert "Bearer" not in out + demo.stderr
    assert out.rstrip().endswith("services stopped")
