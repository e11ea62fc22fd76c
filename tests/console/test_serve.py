"""``keep serve`` as a user starts it: the token is created on first start, kept next to
the SQLite store (owner-only), printed in the sign-in link and the same on the next start."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from keep_sdk.console import stored_token
from tests.console.stores import prepare


def test_a_stored_token_is_created_once_and_kept_private(tmp_path: Path) -> None:
    path = tmp_path / "state" / "console-token"
    first = stored_token(path)
    assert len(first) >= 16
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stored_token(path) == first
    path.write_text("short\n")
    assert stored_token(path) != "short"


def _start(url: str, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if k != "KEEP_CONSOLE_TOKEN"}
    process = subprocess.Popen(
        [sys.executable, "-m", "keep_sdk", "serve", "--store", url, "--port", "0"],
        env=env,
        cwd=cwd,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("sign in: "):
            return process, line.removeprefix("sign in: ").strip()
    process.wait(timeout=30)
    process.stderr.close()
    raise AssertionError(f"keep serve printed no sign-in link (exit {process.returncode})")


def test_keep_serve_prints_the_same_sign_in_token_on_every_start(tmp_path: Path) -> None:
    prepared = prepare(tmp_path)
    links = []
    for _ in range(2):
        process, link = _start(prepared.url, tmp_path)
        try:
            links.append(link)
        finally:
            process.terminate()
            process.wait(timeout=20)
            assert process.stderr is not None
            process.stderr.close()
    token = (tmp_path / "console-token").read_text().strip()
    assert links[0] == links[1]
    assert links[0].endswith(f"/login?token={token}")
    assert links[0].startswith("http://127.0.0.1:")
