"""One plugin set, one set of registries: validate, load and deploy read connectors *and* rules
from the same plugins (the facade, ``KeepPlugins`` and the runtime agree)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from pydantic import BaseModel

import keep_sdk
from keep_sdk.connectors import Connector, ConnectorSet, operation
from keep_sdk.connectors.builtin import BUILTIN_CONNECTORS
from keep_sdk.model import OperationKind
from keep_sdk.plugins import KeepPlugins, hookimpl
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import MemoryStore
from keep_sdk.validator import Analysis, Finding, Rule, RuleMeta, Severity

USES_NOTES = """
export default Keep.workflow({
  name: "notes",
  topics: {},
  producers: {
    poll: { schedule: { interval: "5m" }, handler: async (ctx, state) => {
      const notes = await ctx.notes.list({});
      return { seen: notes.length };
    } },
  },
  consumers: {},
});
"""


class _ListArgs(BaseModel):
    pass


class Notes(Connector):
    """Notes kept by a plugin."""

    name = "notes"

    @operation(kind=OperationKind.READ, permission="notes.read", args=_ListArgs)
    def list(self, args: _ListArgs) -> list[str]:
        return []


def _no_producers(analysis: Analysis) -> Iterator[Finding]:
    for handler in analysis.handlers:
        if handler.phase.value == "producer":
            yield Finding("main", handler.node, {})


NO_PRODUCERS = Rule(
    RuleMeta(
        id="acme-no-producers",
        severity=Severity.ERROR,
        description="This installation runs consumers only.",
        messages={"main": "producers are not allowed here"},
        hint="Remove the producer.",
    ),
    _no_producers,
)


class _Plugin:
    def __init__(self, connectors: Sequence[type[Connector]] = (), rules: Sequence[Rule] = ()):
        self._connectors = list(connectors)
        self._rules = list(rules)

    @hookimpl
    def register_connectors(self) -> list[type[Connector]]:
        return self._connectors

    @hookimpl
    def register_rules(self) -> list[Rule]:
        return self._rules


def _plugins(**contributions: Sequence[object]) -> KeepPlugins:
    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(_Plugin(**contributions), name="acme")  # type: ignore[arg-type]
    return plugins


def _rules(report: keep_sdk.Report) -> set[str]:
    return {d.rule for d in report.diagnostics if d.severity == "error"}


def test_validate_with_plugins_takes_their_connectors_too() -> None:
    plugins = _plugins(connectors=[Notes])
    assert _rules(keep_sdk.validate(USES_NOTES, plugins=plugins)) == set()
    assert _rules(keep_sdk.validate(USES_NOTES)) == {"unknown-operation"}
    assert plugins.validate(USES_NOTES) == keep_sdk.validate(USES_NOTES, plugins=plugins)


def test_validate_with_plugins_takes_their_rules() -> None:
    plugins = _plugins(connectors=[Notes], rules=[NO_PRODUCERS])
    assert _rules(keep_sdk.validate(USES_NOTES, plugins=plugins)) == {"acme-no-producers"}


def test_the_low_level_validator_uses_only_what_it_is_given() -> None:
    from keep_sdk.contract.manifest import Manifest
    from keep_sdk.validator import validate

    assert _rules(validate(USES_NOTES)) == {"unknown-operation"}
    given = Manifest(connectors=[Notes.manifest()])
    assert _rules(validate(USES_NOTES, connectors=given)) == set()
    assert _rules(validate(USES_NOTES, connectors=given, rules=[NO_PRODUCERS])) == {
        "acme-no-producers"
    }


def test_deploy_validates_with_the_plugins_rules_and_the_runtimes_connectors() -> None:
    plugins = _plugins(connectors=[Notes], rules=[NO_PRODUCERS])
    connectors = plugins.connector_set()
    runtime = Runtime(
        MemoryStore(),
        connectors,
        load_workflow=plugins.load_workflow,
        isolation=InProcessIsolation(),
    )
    with pytest.raises(keep_sdk.ScriptRejected) as rejected:
        runtime.deploy(USES_NOTES)
    assert rejected.value.report is not None
    assert _rules(rejected.value.report) == {"acme-no-producers"}

    without_rule = _plugins(connectors=[Notes])
    builtins_only = ConnectorSet.from_classes(BUILTIN_CONNECTORS)
    runtime = Runtime(
        MemoryStore(),
        builtins_only,
        load_workflow=without_rule.load_workflow,
        isolation=InProcessIsolation(),
    )
    with pytest.raises(keep_sdk.ScriptRejected) as rejected:
        runtime.deploy(USES_NOTES)
    assert rejected.value.report is not None
    assert _rules(rejected.value.report) == {"unknown-operation"}


def test_a_runtime_without_a_loader_refuses_to_deploy_and_says_what_to_pass() -> None:
    runtime = Runtime(MemoryStore(), ConnectorSet([]), isolation=InProcessIsolation())
    with pytest.raises(keep_sdk.ConfigurationError, match="load_workflow="):
        runtime.deploy(USES_NOTES)


def test_registering_a_plugin_refreshes_the_manifest() -> None:
    plugins = KeepPlugins(load_entry_points=False)
    assert "notes" not in [c.name for c in plugins.manifest().connectors]
    plugins.register(_Plugin(connectors=[Notes]), name="acme")
    assert "notes" in [c.name for c in plugins.manifest().connectors]
