"""The site builds with ``mkdocs build --strict`` (CI builds it only here): no broken link,
anchor or nav entry, no warning from mkdocstrings; and it builds without network."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def _offline() -> list[str]:
    """A prefix that runs a command without network (a new network namespace) where
    this machine allows it, so the build is shown to need no download."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], check=False).returncode == 0:
        return [unshare, "-n"]
    return []


@pytest.mark.slow
def test_mkdocs_build_strict_offline(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)]
    done = subprocess.run(
        [*_offline(), *build],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    for page in ("reference/api", "reference/cli", "rules/event-title", "policy"):
        assert (tmp_path / page / "index.html").is_file(), page
    for html in tmp_path.rglob("*.html"):
        text = html.read_text()
        assert "fonts.googleapis.com" not in text, html  # theme font: false
