"""keep.toml in the working folder (or a parent) is used by every command, `keep config` says
which file and why, and an unknown connector's diagnostic names the file or where keep looked.

Each command runs as a real `python -m keep_sdk` process in a chosen working folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CRM = """
[connectors.crm]
type = "http"
base_url = "http://127.0.0.1:9"
[connectors.crm.operations.getContact]
kind = "read_by_id"
path = "/contacts/{id}"
arguments = { properties = { id = { type = "string" } }, required = ["id"] }
"""

SCRIPT = """export default Keep.workflow({
  name: "lookup",
  topics: {},
  producers: {
    p: {
      schedule: { interval: "5m" },
      handler: async (ctx, state) => {
        await ctx.%s.getContact({ id: "c1" });
        return {};
      },
    },
  },
});
"""


def keep(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "KEEP_CONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "keep_sdk", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**environ, "COLUMNS": "100", **env},
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with keep.toml (an HTTP connector `crm`), flow.js calling it, and
    an empty subfolder."""
    root = tmp_path / "project"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "keep.toml").write_text(CRM)
    (root / "flow.js").write_text(SCRIPT % "crm")
    return root


@pytest.mark.parametrize("where", [".", "sub", "sub/deeper"])
def test_keep_validate_uses_the_keep_toml_of_the_working_folder_or_a_parent(
    project: Path, where: str
) -> None:
    done = keep(project / where, "validate", str(project / "flow.js"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 file checked: no problems found" in done.stdout


def test_an_unknown_connector_names_the_keep_toml_that_was_read(project: Path) -> None:
    (project / "typo.js").write_text(SCRIPT % "crmm")
    read = f"keep.toml read: {project / 'keep.toml'} (found in the working folder)"
    text = keep(project, "validate", "typo.js")
    assert text.returncode == 1, text.stdout + text.stderr
    assert f"`ctx.crmm` is not a connector (did you mean `crm`?); {read}" in text.stdout
    as_json = keep(project, "validate", "--format", "json", "typo.js")
    [diagnostic] = json.loads(as_json.stdout)["reports"][0]["diagnostics"]
    assert diagnostic["message"].endswith(read)

    parent = keep(project / "sub", "validate", "../typo.js")
    assert (
        f"keep.toml read: {project / 'keep.toml'} (found in a parent of the working folder)"
        in parent.stdout
    )
    named = keep(project / "sub", "--config", "../keep.toml", "validate", "../typo.js")
    assert f"keep.toml read: {project / 'keep.toml'} (named by --config)" in named.stdout


def test_an_unknown_connector_says_no_keep_toml_was_found_and_where_keep_looked(
    tmp_path: Path,
) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "flow.js").write_text(SCRIPT % "crm")
    done = keep(alone, "validate", "flow.js")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"`ctx.crm` is not a connector; no keep.toml found (looked in {alone} and its "
        f"parents, {alone / '.keep'})"
    ) in done.stdout


def test_keep_run_refuses_an_unknown_connector_naming_the_keep_toml(project: Path) -> None:
    (project / "typo.js").write_text(SCRIPT % "crmm")
    done = keep(project / "sub", "run", "../typo.js", "--isolation", "in-process")
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "`ctx.crmm` is not a connector" in output
    assert f"keep.toml read: {project / 'keep.toml'} (found in a parent" in output
    assert "Traceback" not in output


def test_keep_config_says_which_file_is_in_use_and_why(project: Path, tmp_path: Path) -> None:
    here = keep(project, "config")
    assert f"configuration: {project / 'keep.toml'} (found in the working folder)" in here.stdout
    assert "connector crm (http): getContact" in here.stdout
    up = json.loads(keep(project / "sub" / "deeper", "config", "--json").stdout)
    assert (up["file"], up["reason"]) == (str(project / "keep.toml"), "parent folder")
    assert up["looked"] == [
        str(project / "sub" / "deeper" / "keep.toml"),
        str(project / "sub" / "keep.toml"),
    ]

    other = tmp_path / "other.toml"
    other.write_text("")
    by_flag = json.loads(keep(project, "--config", str(other), "config", "--json").stdout)
    assert (by_flag["file"], by_flag["reason"]) == (str(other), "--config")
    by_env = keep(project, "config", KEEP_CONFIG=str(other))
    assert f"configuration: {other} (named by $KEEP_CONFIG)" in by_env.stdout

    store = tmp_path / "store"
    store.mkdir()
    (store / "keep.toml").write_text(CRM)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    beside = keep(elsewhere, "config", "--store", f"sqlite:///{store / 'keep.db'}")
    assert f"configuration: {store / 'keep.toml'} (found next to the store)" in beside.stdout


def test_keep_config_says_where_it_looked_when_there_is_none(tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    text = keep(alone, "config")
    assert text.returncode == 0, text.stderr
    assert "configuration: none (built-in defaults)" in text.stdout
    assert f"no keep.toml found; looked in {alone} and its parents, {alone / '.keep'}" in (
        text.stdout
    )
    shown = json.loads(keep(alone, "config", "--json").stdout)
    assert (shown["file"], shown["reason"]) == (None, "none found")
    assert shown["looked"][0] == str(alone / "keep.toml")
    assert shown["looked"][-1] == str(alone / ".keep" / "keep.toml")
