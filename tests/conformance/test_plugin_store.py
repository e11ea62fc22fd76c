"""A store shipped as a plugin distribution is certified with ``keep conformance``.

The store is the one the store author's tutorial builds (docs/tutorials/shelf/): its
wheel is built here and installed into a fresh venv, whose ``keep conformance
--store shelf://…`` certifies it on the capabilities it declares.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).parents[2]
SHELF = REPO / "docs" / "tutorials" / "shelf"
CERTIFIED = {"core", "pages", "counts", "reopen", "fault-injection"}
SELECTION = "publish or page or count or reopen or all_or_nothing or lease or reading"


def _run(
    *command: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, check=False, env=env
    )


def _rows(output: str) -> dict[str, dict[str, Any]]:
    report = json.loads(output)
    return {row["capability"]: row for row in report["certificate"]["capabilities"]}


@pytest.fixture(scope="module")
def plugin_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh venv holding the tutorial store's wheel, and keep_sdk from
    this checkout with its dependencies (as ``--system-site-packages`` would)."""
    work = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(SHELF, work / "src")
    built = _run(sys.executable, "-m", "build", "--wheel", "--outdir", work / "dist", source)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (work / "dist").glob("keep_sdk_shelf-*.whl")
    venv = work / "venv"
    made = _run(sys.executable, "-m", "venv", "--without-pip", venv)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    Path(site.stdout.strip(), "keep_sdk_here.pth").write_text(
        f"{REPO}\n{sysconfig.get_paths()['purelib']}\n"
    )
    installed = _run(
        sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
        "--quiet", "--disable-pip-version-check", wheel,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    return python


def _clean_env() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KEEP_SDK_DISABLE_PLUGINS")
    }


@pytest.mark.slow
def test_the_tutorial_store_installed_from_its_wheel_is_certified(plugin_python: Path) -> None:
    certified = _run(
        plugin_python, "-m", "keep_sdk", "conformance", "--store", "shelf://certified",
        "-k", SELECTION, "--json", env=_clean_env(),
    )  # fmt: skip
    assert certified.returncode == 0, certified.stdout[-3000:] + certified.stderr[-3000:]
    rows = _rows(certified.stdout)
    assert {name for name, row in rows.items() if row["status"] == "passed"} >= CERTIFIED
    assert all(rows[name]["failed"] == 0 for name in rows)
    assert rows["durable"]["status"] == rows["processes"]["status"] == "not declared"
    assert rows["core"]["passed"] >= 20


FORGETFUL = """
import keep_sdk
from keep_sdk.stores import MemoryStore, StoreCapability


class ForgetfulStore(MemoryStore):
    capabilities = MemoryStore.capabilities | {StoreCapability.REOPEN}


@keep_sdk.hookimpl
def register_stores():
    return {"forgetful": lambda url, **options: ForgetfulStore(**options)}
"""


@pytest.mark.slow
def test_a_plugin_store_failing_a_capability_it_declares_or_lacking_a_required_one_fails(
    tmp_path: Path,
) -> None:
    """An in-memory store that declares ``reopen`` (reopening finds nothing), and is
    required to reach its data from other processes, which it does not declare."""
    (tmp_path / "forgetful_plugin.py").write_text(FORGETFUL)
    info = tmp_path / "forgetful_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: forgetful-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[keep_sdk]\nforgetful = forgetful_plugin\n")
    env = {**_clean_env(), "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    refused = _run(
        sys.executable, "-m", "keep_sdk", "conformance", "--store", "forgetful://",
        "-k", "survives_a_reopen or heartbeat", "--require", "processes", "--json", env=env,
    )  # fmt: skip
    assert refused.returncode == 1, refused.stdout[-3000:] + refused.stderr[-3000:]
    rows = _rows(refused.stdout)
    assert rows["reopen"]["status"] == "failed"
    assert rows["reopen"]["failed"] >= 1
    assert rows["core"]["status"] == "passed"
    assert rows["processes"]["status"] == "not declared"
    assert rows["processes"]["required"] is True
    assert rows["durable"]["status"] == "not run"
