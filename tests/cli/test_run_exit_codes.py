"""Exit codes a cron job can trust: `keep run --until-idle` says when work waits on a fault,
and Ctrl-C at any moment of start-up ends `keep run` without a traceback.

Each command is a real `python -m keep_sdk` process on a real SQLite store; the HTTP
connector of keep.toml points at a closed port, so its call fails transiently."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from keep_sdk.cli._interrupts import EXIT_INTERRUPTED
from keep_sdk.cli.run import EXIT_WAITING
from tests.read_only import read_only

CRM = """
[connectors.crm]
type = "http"
base_url = "http://127.0.0.1:9"
[connectors.crm.operations.getContact]
kind = "read_by_id"
path = "/contacts/{id}"
arguments = { properties = { id = { type = "string" } }, required = ["id"] }
"""

LOOKUP = """export default Keep.workflow({
  name: "lookup",
  topics: {},
  producers: {
    p: {
      schedule: { interval: "5m" },
      handler: async (ctx, state) => {
        await ctx.crm.getContact({ id: "c1" });
        return {};
      },
    },
  },
});
"""

QUIET = """export default Keep.workflow({
  name: "quiet",
  topics: {},
  producers: {
    p: { schedule: { interval: "5m" }, handler: async (ctx, state) => ({}) },
  },
});
"""


def _command(project: Path, script: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "keep_sdk",
        "run",
        script,
        "--until-idle",
        "--grant",
        "crm.read",
        "--isolation",
        "in-process",
        "--store",
        f"sqlite:///{project / 'keep.db'}",
    ]


def _environ() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "KEEP_CONFIG"}, "COLUMNS": "100"}


def _start(project: Path, stdout: int) -> subprocess.Popen[str]:
    """`keep run --until-idle` of lookup.js, its stderr piped."""
    return subprocess.Popen(
        _command(project, "lookup.js"),
        cwd=project,
        env=_environ(),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "keep.toml").write_text(CRM)
    (tmp_path / "lookup.js").write_text(LOOKUP)
    (tmp_path / "quiet.js").write_text(QUIET)
    return tmp_path


def test_until_idle_exits_3_when_a_run_waits_on_a_transient_fault(project: Path) -> None:
    done = subprocess.run(
        _command(project, "lookup.js"),
        cwd=project,
        env=_environ(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == EXIT_WAITING == 3, done.stdout + done.stderr
    assert "work waits on a fault" in done.stderr
    assert "Traceback" not in done.stderr


def test_until_idle_exits_0_when_nothing_waits_on_a_fault(project: Path) -> None:
    done = subprocess.run(
        [c for c in _command(project, "quiet.js") if c not in ("--grant", "crm.read")],
        cwd=project,
        env=_environ(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("after_s", [0.2, 1.0, 2.5])
def test_ctrl_c_during_start_up_prints_no_traceback(project: Path, after_s: float) -> None:
    process = _start(project, stdout=subprocess.PIPE)
    time.sleep(after_s)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    assert "KeyboardInterrupt" not in stderr, stderr
    assert process.returncode in (EXIT_WAITING, EXIT_INTERRUPTED), (process.returncode, stderr)


def test_ctrl_c_after_the_work_leaves_the_status_it_decided(project: Path) -> None:
    """Ctrl-C pressed again and again from the last line on: while the interpreter joins
    its threads and finalises, it can neither print a traceback nor kill the process by
    the signal (Python restores the default handler as it finalises)."""
    for attempt in range(2):
        (project / "keep.db").unlink(missing_ok=True)
        with _start(project, stdout=subprocess.DEVNULL) as process:
            assert process.stderr is not None
            seen = []
            for text in process.stderr:
                seen.append(text)
                if "work waits on a fault" in text:
                    break
            while process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGINT)
                time.sleep(0.001)
            stderr = "".join(seen) + process.stderr.read()
        assert "Traceback" not in stderr, (attempt, stderr)
        assert "KeyboardInterrupt" not in stderr, (attempt, stderr)
        assert process.returncode in (EXIT_WAITING, EXIT_INTERRUPTED), (attempt, stderr)


BUSY = """export default Keep.workflow({
  name: "busy",
  topics: { "tick": {} },
  producers: {
    p: {
      schedule: { interval: "1s" },
      handler: async (ctx, state) => {
        const n = (state?.n ?? 0) + 1;
        for (let i = 0; i < 5; i++) {
          await ctx.publish("tick", { messageId: `t${n}-${i}`, title: `tick ${n} ${i}` });
        }
        return { n };
      },
    },
  },
});
"""


def _busy_run(project: Path) -> subprocess.Popen[str]:
    """`keep run` of a workflow that keeps running (no --until-idle), its stderr piped."""
    (project / "busy.js").write_text(BUSY)
    return subprocess.Popen(
        [
            c
            for c in _command(project, "busy.js")
            if c not in ("--grant", "crm.read", "--until-idle")
        ],
        cwd=project,
        env=_environ(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_store_file_removed_mid_run_ends_keep_run_with_one_message(project: Path) -> None:
    database = project / "keep.db"
    process = _busy_run(project)
    try:
        deadline = time.monotonic() + 120
        while not database.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(3)
        for path in project.glob("keep.db*"):
            path.unlink()
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1, stderr
    assert f"the store file {database} was removed" in stderr
    assert "Traceback" not in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr


def test_store_files_made_read_only_mid_run_end_keep_run_with_one_message(
    project: Path,
) -> None:
    database = project / "keep.db"
    process = _busy_run(project)
    try:
        deadline = time.monotonic() + 120
        while not database.with_name("keep.db-shm").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(3)
        with read_only(sorted(project.glob("keep.db*"))):
            _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1, (process.returncode, stderr)
    assert "was made read-only while keep was using it" in stderr, stderr
    assert "Traceback" not in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
