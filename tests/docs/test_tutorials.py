"""Every tutorial runs as written: its files are written, its commands and Python
blocks run in order in an empty directory, with the built-in connector doubles
(conventions: `docsgen.fences`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from docsgen.fences import blocks, shell_script

TUTORIALS = Path(__file__).parents[2] / "docs" / "tutorials"
RUN_ELSEWHERE = {
    "store.md": "tests/conformance/test_plugin_store.py builds its wheel, installs it into a "
    "fresh venv and certifies it: run here, its `pip install` would change this suite's venv"
}
"""Tutorials another test runs, with why."""
PAGES = sorted(
    p.name for p in TUTORIALS.glob("*.md") if p.name != "index.md" and p.name not in RUN_ELSEWHERE
)
POSTGRES = "$DATABASE_URL"
"""A page that uses this variable gets a fresh database of the session's PostgreSQL server."""


def _env(extra: dict[str, str]) -> dict[str, str]:
    """The reader's shell: ``keep``, ``python`` and ``pytest`` are the SDK's."""
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KEEP_"))}
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "120"
    return {**env, **extra}


def _run(args: list[str], cwd: Path, where: str, env: dict[str, str]) -> None:
    done = subprocess.run(
        args, cwd=cwd, env=_env(env), capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, (
        f"{where}: exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )


def run_tutorial(page: Path, workdir: Path, env: dict[str, str]) -> int:
    """Run every block of `page` in `workdir` with `env` added to the reader's
    environment; the number of blocks executed."""
    executed = 0
    for block in blocks(page.read_text()):
        where = f"{page.name}:{block.line}"
        if block.action == "file":
            assert block.path is not None
            target = workdir / block.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
        elif block.action == "sh":
            _run(["bash", "-c", shell_script(block)], workdir, where, env)
        elif block.action == "python":
            _run([sys.executable, "-c", block.text], workdir, where, env)
        else:
            continue
        executed += 1
    return executed


def test_there_are_tutorials() -> None:
    assert len(PAGES) >= 5, PAGES


def _needs_postgres(name: str) -> bool:
    return POSTGRES in (TUTORIALS / name).read_text()


@pytest.mark.slow  # each runs a dozen `keep` commands: 10-60 s
@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.postgres) if _needs_postgres(n) else n for n in PAGES],
)
def test_tutorial_runs_as_written(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env = {}
    if _needs_postgres(name):
        server = request.getfixturevalue("postgres_server")
        env["DATABASE_URL"] = server.create_database("keep_tutorial")
    executed = run_tutorial(TUTORIALS / name, tmp_path, env)
    assert executed >= 2, f"{name} has nothing to run"
