"""Plugins add rules through ``register_rules``; they see the same facts as built-in rules."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from keep_sdk import validate
from keep_sdk.errors import PluginError
from keep_sdk.plugins import KeepPlugins, hookimpl
from keep_sdk.validator import Analysis, Finding, Rule, RuleMeta, Severity, render_sarif

SOURCE = (
    Path(__file__).parents[2] / "fixtures" / "workflows" / "valid" / "spec_06_declaration_shape.js"
).read_text()


def no_sheets(analysis: Analysis) -> Iterator[Finding]:
    for call in analysis.calls:
        if call.connector == "sheets":
            yield Finding("sheets", call.node, {"target": call.target}, call.handler)


NO_SHEETS = Rule(
    RuleMeta(
        id="company-no-sheets",
        severity=Severity.WARNING,
        description="Our company does not use spreadsheets.",
        messages={"sheets": "`ctx.{target}` writes to a spreadsheet"},
        hint="Post to the #data channel instead.",
    ),
    no_sheets,
)


class Plugin:
    @hookimpl
    def register_rules(self) -> Sequence[Rule]:
        return [NO_SHEETS]


def test_plugin_rule_runs_with_the_builtin_ones() -> None:
    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(Plugin(), name="company")
    report = validate(SOURCE, plugins=plugins)
    [diagnostic] = report.diagnostics
    assert diagnostic.rule == "company-no-sheets"
    assert diagnostic.handler == "consumers.processEmail.mutate"
    assert diagnostic.message == "`ctx.sheets.appendRow` writes to a spreadsheet"
    sarif = render_sarif([report], plugins.rules())
    assert '"id": "company-no-sheets"' in sarif


def test_duplicate_rule_id_is_a_plugin_error() -> None:
    class Clash:
        @hookimpl
        def register_rules(self) -> Sequence[Rule]:
            from keep_sdk.validator.rules.syntax_error import META

            return [Rule(META, no_sheets)]

    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(Clash(), name="clash")
    with pytest.raises(PluginError, match="syntax-error"):
        plugins.rules()


def test_rule_meta_is_frozen_and_checked() -> None:
    with pytest.raises(ValueError, match="should match pattern"):
        RuleMeta(
            id="Not Kebab",
            severity=Severity.ERROR,
            description="x",
            messages={"m": "x"},
            hint="x",
        )
    with pytest.raises(ValueError, match="unknown message ids"):
        RuleMeta(
            id="ok-id",
            severity=Severity.ERROR,
            description="x",
            messages={"m": "x"},
            hint="x",
            hints={"other": "y"},
        )


def test_the_rule_example_in_the_docs_works() -> None:
    import re
    import types

    doc = (Path(__file__).parents[2] / "docs" / "validator.md").read_text()
    section = doc.split("## Writing a rule", 1)[1]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    module = types.ModuleType("acme_rules")
    exec(compile(code, "docs/validator.md", "exec"), module.__dict__)
    plugins = KeepPlugins(load_entry_points=False)
    plugins.register(module, name="acme")
    source = (
        Path(__file__).parents[2] / "fixtures" / "workflows" / "valid" / "branches_and_switch.js"
    ).read_text()
    report = validate(source, plugins=plugins)
    assert {d.rule for d in report.diagnostics} == {"acme-no-slack"}
