"""Make files read-only for the running user, root included, for the length of a block."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["read_only"]


@contextmanager
def read_only(paths: Sequence[Path]) -> Iterator[None]:
    """`paths` made read-only for this process's user: mode 0444, and for root (whom modes
    do not stop) the immutable attribute; undone on exit. Skips, saying why, as root on a
    machine without ``chattr``: there is no other way to stop root writing a file."""
    root = os.geteuid() == 0
    if root and paths and shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: no way to make a file read-only")
    try:
        for path in paths:
            path.chmod(0o444)
            if root:
                subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True)
        yield
    finally:
        for path in paths:
            if root:
                subprocess.run(["chattr", "-i", str(path)], check=False, capture_output=True)
            path.chmod(0o644)
