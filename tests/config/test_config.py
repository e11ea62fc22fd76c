"""keep.toml: one clear message for a bad file (exit 2), secrets by reference, policy sources."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

import keep_sdk
import keep_sdk.connectors as keep_sdk_connectors
from keep_sdk.app import Installation
from keep_sdk.cli import cli
from keep_sdk.config import load_config
from keep_sdk.connectors.configured import ConnectorType
from keep_sdk.connectors.secrets import Secret, redact
from keep_sdk.connectors.types import BUILTIN_CONNECTOR_TYPES
from keep_sdk.errors import ConfigurationError, PluginError
from keep_sdk.plugins import KeepPlugins

TYPES = {t.name: t for t in BUILTIN_CONNECTOR_TYPES}

HTTP = """
[connectors.crm]
type = "http"
base_url = "http://127.0.0.1:9"
headers = { Authorization = "Bearer ${CRM_TOKEN}" }
[connectors.crm.operations.getContact]
kind = "read_by_id"
path = "/contacts/{id}"
arguments = { properties = { id = { type = "string" } }, required = ["id"] }
"""


def keep(tmp_path: Path, text: str, *args: str, env: dict[str, str] | None = None):
    config = tmp_path / "keep.toml"
    config.write_text(text)
    return CliRunner().invoke(cli, ["--config", str(config), *args], env=env or {})


@pytest.mark.parametrize(
    ("text", "key", "hint"),
    [
        ("[connectors.crm]\ntype = \"htp\"\n", "connectors.crm.type", "installed types: exec, http, mail, mcp, sql"),
        (HTTP.replace('path = "/contacts/{id}"', 'path = "contacts/{id}"'),
         "connectors.crm.operations.getContact.path", "must start with '/'"),
        (HTTP.replace('required = ["id"]', "required = []"),
         "connectors.crm.operations.getContact", "must be a required argument"),
        (HTTP.replace("base_url", "baseurl"), "connectors.crm.baseurl", "not a known setting"),
        (HTTP.replace('"Bearer ${CRM_TOKEN}"', '"Bearer abc123"'),
         "connectors.crm.headers: the header Authorization", "must not be written"),
        (HTTP.replace("${CRM_TOKEN}", "${NOT_SET_ANYWHERE}"),
         "connectors.crm.headers.Authorization", "export it"),
        ("[policy.sandbox]\ncpu_time_s = -1\n", "policy.sandbox.cpu_time_s", "greater than 0"),
        ("[workflows.leads.policy]\nmutate_reads = \"all\"\n", "workflows.leads.policy.mutate_reads",
         "'none' or 'by_id'"),
        ("[connectors.crm\n", "keep.toml is not valid TOML", "line 1"),
    ],
)  # fmt: skip
def test_a_bad_config_is_one_message_naming_file_and_key_exit_2(tmp_path, text, key, hint):
    done = keep(tmp_path, text, "config", env={"CRM_TOKEN": "t0ken-value-1"})
    assert done.exit_code == 2, done.output
    assert str(tmp_path / "keep.toml") in done.stderr
    assert key in done.stderr
    assert hint in done.stderr
    assert "Traceback" not in done.stderr
    assert "abc123" not in done.stderr
    assert "t0ken-value-1" not in done.stderr


def test_keep_config_shows_each_policy_value_and_its_source(tmp_path):
    text = (
        '[policy]\nmutate_reads = "by_id"\n[policy.sandbox]\ncpu_time_s = 2\n'
        "[workflows.leads.policy.sandbox]\ncpu_time_s = 9\n"
    )
    done = keep(tmp_path, text, "config", "--workflow", "leads", "--json")
    assert done.exit_code == 0, done.output
    values = {v["key"]: (v["value"], v["source"]) for v in json.loads(done.output)["policy"]}
    assert values["sandbox.cpu_time_s"] == (9, "workflow")
    assert values["mutate_reads"] == ("by_id", "keep.toml")
    assert values["sandbox.wall_time_s"] == (30.0, "default")
    plain = keep(tmp_path, text, "config", "--json")
    values = {v["key"]: v for v in json.loads(plain.output)["policy"]}
    assert values["sandbox.cpu_time_s"]["source"] == "keep.toml"


def test_the_file_policy_is_the_installation_policy(tmp_path):
    config = tmp_path / "keep.toml"
    config.write_text("[policy]\nwake_at_min_s = 5\n[workflows.x.policy]\nwake_at_min_s = 7\n")
    loaded = load_config(config, types=TYPES, environ={})
    assert loaded.policy.wake_at_min_s == 5
    assert loaded.policy_for("x").wake_at_min_s == 7
    assert loaded.policy_for("y").wake_at_min_s == 5


def test_secrets_come_from_a_0600_file_and_a_looser_one_is_refused(tmp_path):
    secrets = tmp_path / "keep.secrets.toml"
    secrets.write_text('CRM = "from-file-value-42"\n')
    os.chmod(secrets, 0o600)
    config = tmp_path / "keep.toml"
    config.write_text(
        'secrets_file = "keep.secrets.toml"\n' + HTTP.replace("${CRM_TOKEN}", "${file:CRM}")
    )
    loaded = load_config(config, types=TYPES, environ={})
    header = loaded.connectors["crm"].settings.headers["Authorization"]  # type: ignore[attr-defined]
    assert header.reveal() == "Bearer from-file-value-42"
    os.chmod(secrets, 0o644)
    with pytest.raises(ConfigurationError) as caught:
        load_config(config, types=TYPES, environ={})
    assert "chmod 600" in str(caught.value)
    assert "from-file-value-42" not in str(caught.value)


@given(value=st.text(min_size=1).filter(lambda text: text.strip("*") != ""))
def test_a_secret_never_shows_in_repr_str_dump_or_pickle(value):
    """(A value made only of ``*`` is left out: it cannot be told from the mask itself.)"""
    secret = Secret(value)
    assert value not in repr(secret).replace("Secret(***)", "")
    assert str(secret) == "***"
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    assert value not in redact(f"a {value} b", [secret])


def test_keep_connectors_lists_configured_operations_without_secrets(tmp_path):
    done = keep(tmp_path, HTTP, "connectors", "--format", "markdown", env={"CRM_TOKEN": "zz-t0k3n"})
    assert done.exit_code == 0, done.output
    assert "getContact" in done.output
    assert "crm.read" in done.output
    assert "zz-t0k3n" not in done.output
    shown = keep(tmp_path, HTTP, "config", "--json", env={"CRM_TOKEN": "zz-t0k3n"})
    [crm] = json.loads(shown.output)["connectors"]
    assert crm["settings"]["headers"] == {"Authorization": "***"}


class Echo(keep_sdk_connectors.Connector):
    """Echoes what it is given, with a greeting from its settings."""

    name = "echo"


class EchoSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str
    token: Secret


class EchoArgs(BaseModel):
    text: str


def _echo_connector(instance: str, settings: EchoSettings) -> keep_sdk_connectors.Connector:
    class Configured(keep_sdk_connectors.Connector):
        name = instance

        @keep_sdk_connectors.operation(kind="read", permission=f"{instance}.read", args=EchoArgs)
        def say(self, args: EchoArgs) -> str:
            return f"{settings.greeting} {args.text}"

    return Configured()


class EchoTypePlugin:
    @keep_sdk.hookimpl
    def register_connector_types(self) -> list[ConnectorType]:
        return [ConnectorType("echo", EchoSettings, _echo_connector)]


def test_a_plugin_adds_a_connector_type_that_keep_toml_can_use(tmp_path):
    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(EchoTypePlugin())
    config = tmp_path / "keep.toml"
    config.write_text('[connectors.hello]\ntype = "echo"\ngreeting = "hi"\ntoken = "${T}"\n')
    loaded = load_config(config, types=plugins.connector_types(), environ={"T": "x-secret-9"})
    inst = Installation.open("memory://", plugins=plugins, config=loaded, isolation="in-process")
    try:
        assert inst.connectors.invoke("hello", "say", {"text": "there"}) == "hi there"
        assert "hello" in inst.connectors.manifest().names()
    finally:
        inst.close()
    config.write_text('[connectors.hello]\ntype = "echo"\ngreeting = "hi"\ntoken = "x-secret-9"\n')
    with pytest.raises(ConfigurationError) as caught:
        load_config(config, types=plugins.connector_types(), environ={})
    assert "connectors.hello.token" in str(caught.value)
    assert "x-secret-9" not in str(caught.value)


def test_a_connector_type_registered_twice_is_a_plugin_error():
    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(EchoTypePlugin(), name="one")
    plugins.register(EchoTypePlugin(), name="two")
    with pytest.raises(PluginError, match="connector type 'echo'"):
        plugins.connector_types()


def test_keep_validate_knows_the_configured_operations_and_their_arguments(tmp_path):
    script = tmp_path / "flow.js"
    script.write_text(
        'export default Keep.workflow({ name: "w", topics: {}, producers: { p: { schedule: '
        '{ interval: "5m" }, handler: async (ctx, state) => { '
        'await ctx.crm.getContact({ id: "c1" }); await ctx.crm.getContacts({}); return {}; } } } });'
    )
    done = keep(tmp_path, HTTP, "validate", str(script), env={"CRM_TOKEN": "t"})
    assert done.exit_code == 1, done.output
    assert "has no operation `getContacts` (did you mean `getContact`?)" in done.output
    assert "1 error," in done.output
