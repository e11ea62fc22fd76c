"""Issue 17, defect 7: concurrent ``keep run`` of the same unchanged file deploy one version.

Three real processes race on one store (SQLite file, PostgreSQL database); the
compare-and-deploy is one store transaction, so exactly one of them deploys.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from subprocess import PIPE

import pytest

from keep_sdk.stores import open_store
from tests.cli.terminal import BATCHES

_BARRIER = """
import sys, time
from keep_sdk.cli import main
start_at = float(sys.argv.pop(1))
time.sleep(max(0.0, start_at - time.time()))
sys.exit(main())
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'keep.db'}"
    server = request.getfixturevalue("postgres_server")
    url: str = server.create_database("cli_deploy")
    return url


def _race(script: Path, store: str, doubles: Path, count: int) -> list[dict[str, object]]:
    start_at = str(time.time() + 2.0)
    env = {**os.environ, "COLUMNS": "80"}
    command = [
        sys.executable, "-c", _BARRIER, start_at, "run", str(script), "--store", store,
        "--doubles", str(doubles), "--until-idle", "--json", "--isolation", "in-process",
    ]  # fmt: skip
    children = [
        subprocess.Popen(command, stdout=PIPE, stderr=PIPE, text=True, env=env)
        for _ in range(count)
    ]
    outputs = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        outputs.append(json.loads(out))
    return outputs


def test_racing_keep_runs_of_one_file_deploy_one_version(store_url: str, tmp_path: Path) -> None:
    script = tmp_path / "batches.js"
    script.write_text(BATCHES)
    doubles = tmp_path / "doubles.db"
    first = _race(script, store_url, doubles, 3)
    assert sorted(bool(o["deployed"]) for o in first) == [False, False, True]
    assert {o["version"] for o in first} == {1}
    again = _race(script, store_url, doubles, 2)
    assert [o["deployed"] for o in again] == [False, False]
    script.write_text(BATCHES + "\n// changed\n")
    changed = _race(script, store_url, doubles, 2)
    assert sorted(bool(o["deployed"]) for o in changed) == [False, True]
    store = open_store(store_url)
    try:
        assert store.get_workflow("batches").version == 2
    finally:
        store.close()
