"""docs/repair-loop.md: its Python loop runs as written, next to the demo's files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from docsgen.fences import blocks

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "repair-loop.md"
DEMO = ROOT / "fixtures" / "workflows" / "demo"


def test_the_loop_on_the_page_repairs_the_draft(tmp_path: Path) -> None:
    for name in ("invoices.js", "invoices.keep.yaml"):
        shutil.copy(DEMO / name, tmp_path / name)
    [code] = [b for b in blocks(PAGE.read_text()) if b.action == "python"]
    assert len(code.text.strip().splitlines()) <= 35
    done = subprocess.run(
        [sys.executable, "-c", code.text], cwd=tmp_path, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "round 0: ok=False problems=1",
        "round 1: ok=True problems=0",
    ]
    assert (tmp_path / "invoices.js").read_text() == (DEMO / "invoices.js").read_text()
