"""`scripts/demo_local_services.py` runs end to end against its real local services."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_demo_runs_every_service_and_reports_what_each_received(tmp_path: Path) -> None:
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
    assert 'HTTP API:    ["GET /incidents"]' in out
    assert "MCP tickets: T-1 'billing: Invoices delayed' (high)" in out
    assert "MCP tickets: T-2 'search: Slow queries' (low)" in out
    assert out.count("SMTP:        to oncall@example.com") == 2
    assert "services stopped" in out
    assert '[connectors.tickets]\ntype = "mcp"' in (tmp_path / "keep.toml").read_text()
