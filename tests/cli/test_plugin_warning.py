"""Issue 17, item 9: a plugin that fails to load is reported once per process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.terminal import BATCHES


def _broken_plugin(site: Path) -> None:
    info = site / "broken_keep_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    metadata = "Metadata-Version: 2.1\nName: broken-keep-plugin\nVersion: 1.0\n"
    (info / "METADATA").write_text(metadata)
    (info / "entry_points.txt").write_text("[keep_sdk]\nbroken = no_such_module_for_keep:plugin\n")


def test_a_broken_plugin_is_reported_once_by_keep_run(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _broken_plugin(site)
    script = tmp_path / "batches.js"
    script.write_text(BATCHES)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "80",
    }
    env.pop("KEEP_SDK_DISABLE_PLUGINS", None)
    done = subprocess.run(
        [
            sys.executable, "-m", "keep_sdk", "run", str(script),
            "--store", f"sqlite:///{tmp_path / 'keep.db'}", "--until-idle",
            "--isolation", "in-process",
        ],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("failed to load") == 1, done.stderr
    assert "warning: plugin 'broken'" in done.stderr
    assert "no_such_module_for_keep" in done.stderr
