"""The rule catalog: an index of every built-in rule and, per rule, its metadata.

A rule's page is its hand-written ``docs/rules/<id>.md`` (what it flags, why,
an incorrect and a correct example) followed by `metadata_section`, rendered
from the rule's `RuleMeta`: severity, description, every message template and
the fix hints. A rule without a hand-written page still gets one, from the
metadata alone (`standalone_page`).
"""

from __future__ import annotations

import string
from collections.abc import Sequence

from docsgen.markdown import code, table
from docsgen.page import Page
from keep_sdk.validator.rule import Rule

__all__ = ["INDEX", "index_page", "metadata_section", "page_path", "standalone_page"]

INDEX = "rules/index.md"
_OPEN, _CLOSE = "\u2039", "\u203a"  # single angle quotation marks around a placeholder


def page_path(rule: Rule) -> str:
    """Where the page of `rule` lives, relative to ``docs/``."""
    return f"rules/{rule.id}.md"


def index_page(rules: Sequence[Rule]) -> Page:
    """The catalog: one row per rule, in the order the validator runs them."""
    rows = [
        (f"[{code(r.id)}]({r.id}.md)", r.meta.severity.value, r.meta.description) for r in rules
    ]
    content = "\n".join(
        [
            "# Rule catalog\n",
            "Every rule `keep validate` runs, in the order it runs them. Each page is the "
            "rule's hand-written explanation with examples, followed by what the rule "
            "itself declares (generated from its metadata at build time). How to write a "
            "rule of your own: [the validator guide](../validator.md).\n",
            table(["rule", "severity", "what it flags"], rows),
        ]
    )
    return Page(INDEX, "Rule catalog", content)


def shown(template: str) -> str:
    """A message template as a reader sees it: ``{{`` unescaped, each placeholder
    shown between single angle quotation marks (filled in per finding)."""
    parts = []
    for literal, field, _spec, _conv in string.Formatter().parse(template):
        parts.append(literal)
        if field is not None:
            parts.append(f"{_OPEN}{field}{_CLOSE}")
    return "".join(parts)


def metadata_section(rule: Rule, *, heading: str = "##") -> str:
    """What `rule` declares, as a Markdown section: the messages it reports and the
    fix hint of each, worded for an LLM repairing the script."""
    meta = rule.meta
    rows = [
        (code(mid), shown(template), shown(meta.hints.get(mid, meta.hint)))
        for mid, template in meta.messages.items()
    ]
    return "\n".join(
        [
            f"{heading} Declared by the rule\n",
            "Generated from the rule's metadata (`keep_sdk.validator.rules`); "
            f"`{_OPEN}name{_CLOSE}` is filled in for each finding.\n",
            table(
                ["id", "severity", "description"],
                [(code(meta.id), meta.severity.value, meta.description)],
            ),
            table(["message id", "message", "fix hint"], rows),
        ]
    )


def standalone_page(rule: Rule) -> Page:
    """The page of a rule that has no hand-written page: its metadata only."""
    meta = rule.meta
    parts = [
        f"# {meta.id}\n",
        f"Severity: **{meta.severity.value}** · {meta.description}\n",
    ]
    if meta.rationale:
        parts += ["## Why it is dangerous\n", meta.rationale + "\n"]
    parts.append(metadata_section(rule))
    return Page(page_path(rule), meta.id, "\n".join(parts))
