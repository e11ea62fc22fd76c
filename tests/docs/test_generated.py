"""Every public name, CLI command and option, rule, hook, schema and policy field has
its generated entry in the docs site (docsgen), so the reference cannot drift."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

import keep_sdk
import keep_sdk.plugins.hookspecs as hookspecs
from docsgen import cli_ref, hooks_ref, policy_ref, rules_ref
from docsgen.api_ref import identifiers
from docsgen.page import Page
from docsgen.pages import generated_pages, rule_sections
from keep_sdk.cli import cli
from keep_sdk.model import BackoffPolicy, HostPolicy, SandboxLimits, schema_names
from keep_sdk.validator.rules import BUILTIN_RULES

DOCS = Path(__file__).parents[2] / "docs"


@pytest.fixture(scope="module")
def pages() -> dict[str, Page]:
    return {page.path: page for page in generated_pages(DOCS)}


def test_api_reference_has_every_public_name(pages: dict[str, Page]) -> None:
    content = pages["reference/api.md"].content
    ids = identifiers(keep_sdk, dict(keep_sdk._HOMES))
    assert set(ids) == set(keep_sdk.__all__)
    for name, dotted in ids.items():
        assert f"::: {dotted}\n" in content, name
        assert dotted.endswith("." + name)


def test_api_identifiers_name_the_defining_module() -> None:
    ids = identifiers(keep_sdk, dict(keep_sdk._HOMES))
    assert ids["Runtime"] == "keep_sdk.runtime.engine.Runtime"
    assert ids["KeepError"] == "keep_sdk.errors.KeepError"
    assert ids["hookimpl"] == "keep_sdk.plugins.hookspecs.hookimpl"


def test_cli_reference_has_every_command_and_option(pages: dict[str, Page]) -> None:
    content = pages[cli_ref.PATH].content
    found = cli_ref.commands(cli)
    assert len(found) >= 16
    for name, command in found:
        assert f"\n## keep {name}\n" in content, name
        section = content.split(f"\n## keep {name}\n")[1].split("\n## ")[0]
        for param in command.params:
            if isinstance(param, click.Option) and param.hidden:
                assert f"`{param.opts[0]}`" not in section, f"keep {name}: hidden {param.name}"
            elif isinstance(param, click.Option):
                for opt in param.opts:
                    assert f"`{opt}`" in section, f"keep {name} {opt}"
            else:
                assert f"`{param.human_readable_name}`" in section, f"keep {name} {param.name}"


def test_rule_catalog_has_every_rule(pages: dict[str, Page]) -> None:
    index = pages[rules_ref.INDEX].content
    sections = rule_sections()
    for rule in BUILTIN_RULES:
        assert f"]({rule.id}.md)" in index, rule.id
        section = sections[rules_ref.page_path(rule)]
        for message_id in rule.meta.messages:
            assert f"`{message_id}`" in section, (rule.id, message_id)
        hand_written = (DOCS / rules_ref.page_path(rule)).is_file()
        assert hand_written or rules_ref.page_path(rule) in pages, rule.id


def test_rule_without_page_gets_one_from_its_metadata() -> None:
    page = rules_ref.standalone_page(BUILTIN_RULES[0])
    assert page.content.startswith(f"# {BUILTIN_RULES[0].id}\n")
    assert "Declared by the rule" in page.content


def test_message_templates_show_placeholders_unescaped() -> None:
    assert rules_ref.shown("`{topic}` ${{x}}") == "`\u2039topic\u203a` ${x}"


def test_hook_reference_has_every_hook(pages: dict[str, Page]) -> None:
    content = pages[hooks_ref.PATH].content
    specs = hooks_ref.hook_specs(hookspecs)
    assert {s.__name__ for s in specs} >= {"register_connectors", "observe"}
    for spec in specs:
        assert f"\n## {spec.__name__}\n" in content
        first_line = (spec.__doc__ or "").strip().splitlines()[0]
        assert first_line in content


def test_schema_reference_has_every_model(pages: dict[str, Page]) -> None:
    content = pages["reference/schemas.md"].content
    for name in schema_names():
        assert f"\n## {name}\n" in content
        assert f"keep schema {name}\n" in content


def test_policy_page_has_every_field_with_a_meaning(pages: dict[str, Page]) -> None:
    content = pages[policy_ref.PATH].content
    models = (HostPolicy, SandboxLimits, BackoffPolicy)
    assert policy_ref.missing_descriptions(*models) == []
    for model in models:
        assert f"\n## {model.__name__}\n" in content
        for name, _info in policy_ref.fields_of(model):
            assert f"| `{name}` |" in content, f"{model.__name__}.{name}"


def test_host_policy_docstring_points_at_the_page() -> None:
    assert "docs/policy.md" in (HostPolicy.__doc__ or "")
    assert policy_ref.PATH == "policy.md"


def test_generated_pages_are_never_committed(pages: dict[str, Page]) -> None:
    for path in pages:
        assert not (DOCS / path).exists(), f"docs/{path} is generated; do not commit it"
