"""The incorrect and correct examples of every rule's docs page say what the rule does.

Each page ``docs/rules/<id>.md`` shows a complete script under ``## Incorrect``
that the rule flags and one under ``## Correct`` that validates clean.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from keep_sdk import validate
from keep_sdk.validator import Rule
from keep_sdk.validator.rules import BUILTIN_RULES

DOCS = Path(__file__).parents[2] / "docs" / "rules"
_SECTION = re.compile(r"^## (?P<title>.+)$", re.MULTILINE)
_JS_BLOCK = re.compile(r"^```js\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


def example(rule_id: str, title: str) -> str:
    """The first ``js`` code block of section `title` of the rule's page."""
    text = (DOCS / f"{rule_id}.md").read_text()
    sections = list(_SECTION.finditer(text))
    for index, section in enumerate(sections):
        if section.group("title") != title:
            continue
        end = sections[index + 1].start() if index + 1 < len(sections) else len(text)
        block = _JS_BLOCK.search(text, section.end(), end)
        assert block is not None, f"{rule_id}.md: no ```js block under ## {title}"
        return block.group("code")
    raise AssertionError(f"{rule_id}.md has no section ## {title}")


def test_example_extraction_reads_the_block_of_the_named_section() -> None:
    code = example("workflow-shape", "Correct")
    assert code.startswith("export default Keep.workflow(")
    assert code != example("workflow-shape", "Incorrect")


@pytest.mark.parametrize("rule", BUILTIN_RULES, ids=lambda r: r.id)
def test_incorrect_example_is_flagged_by_its_rule(rule: Rule) -> None:
    report = validate(example(rule.id, "Incorrect"), filename=f"{rule.id}.md")
    found = {d.rule for d in report.diagnostics}
    assert rule.id in found, f"## Incorrect of {rule.id}.md is not flagged by it: {found}"
    if rule.id != "syntax-error":
        assert "syntax-error" not in found, f"## Incorrect of {rule.id}.md does not compile"


@pytest.mark.parametrize("rule", BUILTIN_RULES, ids=lambda r: r.id)
def test_correct_example_validates_clean(rule: Rule) -> None:
    report = validate(example(rule.id, "Correct"), filename=f"{rule.id}.md")
    problems = [f"{d.line}:{d.column} {d.rule}: {d.message}" for d in report.diagnostics]
    assert problems == [], f"## Correct of {rule.id}.md is flagged: {problems}"
