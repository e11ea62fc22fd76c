"""The plugin manager: built-ins, entry points, broken plugins, conflicts, observers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import BaseModel

import keep_sdk
from keep_sdk.connectors import Connector, operation
from keep_sdk.model import OperationKind
from keep_sdk.plugins import KeepPlugins, RunChanged


class _Args(BaseModel):
    text: str


def _plugin_with(connector: type[Connector]) -> object:
    class Plugin:
        @keep_sdk.hookimpl
        def register_connectors(self) -> list[type[Connector]]:
            return [connector]

    return Plugin()


def test_builtins_are_plugins_and_every_hookimpl_has_a_spec() -> None:
    plugins = KeepPlugins(load_entry_points=False)
    plugins.pm.check_pending()
    assert list(plugins.connectors()) == ["approvals", "gmail", "jobs", "sheets", "slack"]


def test_a_registered_plugin_adds_a_connector() -> None:
    class Echo(Connector):
        name = "echo"

        @operation(kind=OperationKind.READ, permission="echo.read", args=_Args)
        def say(self, args: _Args) -> str:
            return args.text

    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(_plugin_with(Echo), name="echo")
    assert plugins.connectors()["echo"] is Echo


def test_two_connectors_with_one_name_are_refused_naming_both() -> None:
    class Sheets2(Connector):
        name = "sheets"

    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(_plugin_with(Sheets2), name="other-sheets")
    with pytest.raises(keep_sdk.PluginError, match="Sheets2"):
        plugins.connectors()


def test_a_non_connector_contribution_is_refused() -> None:
    class Plugin:
        @keep_sdk.hookimpl
        def register_connectors(self) -> list[object]:
            return [dict]

    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(Plugin())
    with pytest.raises(keep_sdk.PluginError, match=r"not a keep_sdk\.connectors\.Connector"):
        plugins.connectors()


def test_an_observer_that_raises_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    import datetime as dt

    from keep_sdk.model import HandlerKind, RunRecord

    seen: list[str] = []

    class Broken:
        @keep_sdk.hookimpl
        def observe(self, observation: object) -> None:
            raise RuntimeError("observer bug")

    class Recorder:
        @keep_sdk.hookimpl
        def observe(self, observation: RunChanged) -> None:
            seen.append(observation.run.id)

    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(Broken(), name="broken")
    plugins.register(Recorder(), name="recorder")
    now = dt.datetime.now(dt.UTC)
    run = RunRecord(
        id="r1",
        workflow="w",
        workflow_version=1,
        handler="h",
        kind=HandlerKind.CONSUMER,
        created_at=now,
        updated_at=now,
    )
    plugins.notify(RunChanged(run=run))
    assert seen == ["r1"]
    assert "observer plugin 'broken' raised" in caplog.text


def _make_distribution(site: Path, name: str, module_source: str) -> None:
    package = name.replace("-", "_")
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(textwrap.dedent(module_source))
    info = site / f"{package}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[keep_sdk]\n{name} = {package}\n")


def _keep(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("KEEP_SDK_DISABLE_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "keep_sdk", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_a_separate_distribution_appears_in_keep_connectors(tmp_path: Path) -> None:
    _make_distribution(
        tmp_path,
        "keep-sdk-acme",
        """
        from pydantic import BaseModel
        import keep_sdk
        from keep_sdk.connectors import Connector, operation

        class Find(BaseModel):
            name: str

        class Acme(Connector):
            \"\"\"Acme widgets.\"\"\"
            name = "acme"

            @operation(kind="read", permission="acme.read", args=Find)
            def find_widget(self, args):
                return {"name": args.name}

        @keep_sdk.hookimpl
        def register_connectors():
            return [Acme]
        """,
    )
    result = _keep(tmp_path, "connectors", "--format", "json")
    assert result.returncode == 0, result.stderr
    manifest = json.loads(result.stdout)
    acme = next(c for c in manifest["connectors"] if c["name"] == "acme")
    assert acme["operations"][0]["name"] == "findWidget"
    assert acme["operations"][0]["permission"] == "acme.read"


def test_a_plugin_that_raises_on_import_is_reported_and_skipped(tmp_path: Path) -> None:
    _make_distribution(tmp_path, "keep-sdk-broken", "raise ImportError('needs libfoo 2')\n")
    result = _keep(tmp_path, "connectors")
    assert result.returncode == 0
    assert "Traceback" not in result.stderr
    assert "plugin 'keep-sdk-broken'" in result.stderr
    assert "needs libfoo 2" in result.stderr
    assert "ctx.sheets.appendRow" in result.stdout
