"""A policy table in keep.toml merges key by key over the effective defaults, and
`keep config` names each value's true source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from keep_sdk.cli import cli
from keep_sdk.config import load_config
from keep_sdk.config.policy import default_tree
from keep_sdk.connectors.types import BUILTIN_CONNECTOR_TYPES
from keep_sdk.errors import ConfigurationError

TYPES = {t.name: t for t in BUILTIN_CONNECTOR_TYPES}


def _leaves(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


DEFAULTS = _leaves(default_tree())
NUMERIC = sorted(
    k
    for k, v in DEFAULTS.items()
    if isinstance(v, int | float) and not isinstance(v, bool) and v > 0
)


def _toml(values: dict[str, Any]) -> str:
    tables: dict[str, list[str]] = {}
    for key, value in values.items():
        table, _, leaf = key.rpartition(".")
        tables.setdefault(table, []).append(f"{leaf} = {json.dumps(value)}")
    parts = []
    for table, lines in tables.items():
        parts.append(f"[policy{'.' + table if table else ''}]")
        parts.extend(lines)
    return "\n".join(parts) + "\n"


def _changed(key: str) -> st.SearchStrategy[Any]:
    value = DEFAULTS[key]
    if isinstance(value, int):
        return st.integers(min_value=1, max_value=value * 3 + 3)
    return st.sampled_from([value / 2, value * 0.9, value])


partial_tables = st.lists(st.sampled_from(NUMERIC), min_size=1, max_size=6, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries({k: _changed(k) for k in keys})
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=partial_tables)
def test_a_partial_table_keeps_every_unset_field_at_its_effective_default(
    tmp_path: Path, values: dict[str, Any]
) -> None:
    config = tmp_path / "keep.toml"
    config.write_text(_toml(values))
    try:
        loaded = load_config(config, types=TYPES, environ={})
    except ConfigurationError:
        assume(False)
        raise
    effective = _leaves(loaded.policy.model_dump(mode="json"))
    sources = {v.key: (v.value, v.source) for v in loaded.policy_values()}
    for key, default in DEFAULTS.items():
        if key in values:
            assert effective[key] == values[key]
            assert sources[key] == (values[key], "keep.toml")
        else:
            assert effective[key] == default, f"{key} lost its default"
            assert sources[key] == (default, "default")


def _keep_config(tmp_path: Path, text: str) -> Any:
    config = tmp_path / "keep.toml"
    config.write_text(text)
    return CliRunner().invoke(cli, ["--config", str(config), "config", "--json"], env={})


def test_keep_config_keeps_the_reconcile_defaults_beside_a_partial_reconcile_table(
    tmp_path: Path,
) -> None:
    done = _keep_config(tmp_path, "[policy.reconcile_backoff]\nbase_s = 5\n")
    assert done.exit_code == 0, done.output
    values = {v["key"]: (v["value"], v["source"]) for v in json.loads(done.output)["policy"]}
    assert values["reconcile_backoff.base_s"] == (5, "keep.toml")
    assert values["reconcile_backoff.cap_s"] == (600.0, "default")
    assert values["backoff.cap_s"] == (300.0, "default")


@pytest.mark.parametrize("spelling", ["max_attempts", "maxAttempts"])
def test_reconcile_max_attempts_is_refused_naming_reconcile_attempts(
    tmp_path: Path, spelling: str
) -> None:
    done = _keep_config(tmp_path, f"[policy.reconcile_backoff]\n{spelling} = 3\n")
    assert done.exit_code == 2, done.output
    assert "reconcile_attempts" in done.output
    assert "Traceback" not in done.output
