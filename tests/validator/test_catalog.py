"""Every rule has metadata, a docs page and a test table; the catalog matches DESIGN.md."""

from __future__ import annotations

import importlib
import string
from collections import defaultdict
from pathlib import Path

import pytest

from keep_sdk.plugins import KeepPlugins
from keep_sdk.validator import Rule, Severity
from keep_sdk.validator.rules import BUILTIN_RULES

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs" / "rules"
CATALOG = {
    "syntax-error": Severity.ERROR,
    "workflow-shape": Severity.ERROR,
    "legacy-format": Severity.ERROR,
    "undeclared-topic": Severity.ERROR,
    "unsubscribed-topic": Severity.ERROR,
    "shared-state": Severity.ERROR,
    "phase-forbidden-call": Severity.ERROR,
    "code-after-mutation": Severity.ERROR,
    "multiple-mutations": Severity.ERROR,
    "mutation-result-used": Severity.ERROR,
    "mutation-in-try": Severity.ERROR,
    "unknown-operation": Severity.ERROR,
    "invalid-arguments": Severity.ERROR,
    "result-shape": Severity.ERROR,
    "dynamic-capability": Severity.ERROR,
    "implicit-code": Severity.ERROR,
    "forbidden-global": Severity.ERROR,
    "reserved-name": Severity.ERROR,
    "undefined-name": Severity.ERROR,
    "analysis-limit": Severity.ERROR,
    "nondeterministic-mutate": Severity.WARNING,
    "event-title": Severity.WARNING,
    "missing-message-id": Severity.WARNING,
    "prepare-result-shape": Severity.WARNING,
    "reserved-event-lost": Severity.WARNING,
    "message-id-not-identity": Severity.WARNING,
    "stateful-regexp": Severity.WARNING,
    "cached-external-data": Severity.WARNING,
}
REQUIRED_SECTIONS = ("## What it flags", "## Why it is dangerous", "## Incorrect", "## Correct")


def test_catalog_ids_and_severities_are_the_published_contract() -> None:
    assert {rule.id: rule.meta.severity for rule in BUILTIN_RULES} == CATALOG


def test_builtin_rules_come_from_the_plugin_manager() -> None:
    rules = KeepPlugins(load_entry_points=False).rules()
    assert [rule.id for rule in rules] == [rule.id for rule in BUILTIN_RULES]


@pytest.mark.parametrize("rule", BUILTIN_RULES, ids=lambda r: r.id)
def test_rule_lives_in_a_module_named_after_it(rule: Rule) -> None:
    module = importlib.import_module(f"keep_sdk.validator.rules.{rule.id.replace('-', '_')}")
    assert module.rule is rule
    assert module.__doc__ is not None
    assert "Why is this bad?" in module.__doc__
    assert rule.meta.rationale


@pytest.mark.parametrize("rule", BUILTIN_RULES, ids=lambda r: r.id)
def test_rule_has_a_docs_page(rule: Rule) -> None:
    page = DOCS / f"{rule.id}.md"
    assert page.is_file(), f"docs/rules/{rule.id}.md is missing"
    text = page.read_text()
    assert text.startswith(f"# {rule.id}\n")
    for section in REQUIRED_SECTIONS:
        assert section in text, f"{page.name} lacks {section!r}"
    assert "```js" in text.split("## Incorrect")[1]
    assert "```js" in text.split("## Correct")[1]


def test_docs_pages_have_no_stale_rules() -> None:
    ids = {rule.id for rule in BUILTIN_RULES}
    assert {page.stem for page in DOCS.glob("*.md")} <= ids | {"index"}


@pytest.mark.parametrize("rule", BUILTIN_RULES, ids=lambda r: r.id)
def test_rule_has_a_test_table(rule: Rule) -> None:
    name = f"tests.validator.rules.test_{rule.id.replace('-', '_')}"
    module = importlib.import_module(name)
    assert rule.id == module.RULE
    assert len(module.INVALID) >= 6, f"{name} needs at least 6 invalid cases"
    assert len(module.VALID) >= 4, f"{name} needs at least 4 valid cases"


@pytest.mark.parametrize("rule", BUILTIN_RULES, ids=lambda r: r.id)
def test_message_templates_render(rule: Rule) -> None:
    arguments: defaultdict[str, str] = defaultdict(lambda: "X")
    for message_id in rule.meta.messages:
        message, hint = rule.meta.render(message_id, arguments)
        assert message.strip()
        assert hint.strip()
    for template in [*rule.meta.messages.values(), *rule.meta.hints.values(), rule.meta.hint]:
        for _, field, _, _ in string.Formatter().parse(template):
            assert field is None or field.isidentifier(), (
                f"bad placeholder {field!r} in {template!r}"
            )
