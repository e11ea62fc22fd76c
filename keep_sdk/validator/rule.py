"""How a rule is declared: frozen metadata plus a check over the script's `Analysis`.

A rule module defines one ``rule = Rule(meta=RuleMeta(...), check=...)``. The
check reads the facts the analysis collected and yields `Finding` objects that
name a message template of the rule; the engine formats them into
`Diagnostic` objects with the rule's id, severity and fix hint.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import tree_sitter
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from keep_sdk.validator._diagnostics import Severity

if TYPE_CHECKING:
    from keep_sdk.validator.facts import Analysis, Handler
    from keep_sdk.validator.vocabulary import WalkVocabulary

__all__ = ["Finding", "Related", "Rule", "RuleMeta"]

_RULE_ID = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"


class RuleMeta(BaseModel):
    """What a rule is: its id, default severity, what it flags and how to fix it.

    `messages` maps a message id to a ``str.format`` template; `hint` is the
    fix hint (also a template, formatted with the same arguments) worded for an
    LLM repairing the script. `hints` may override the hint per message id.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=_RULE_ID, description="Kebab-case id, e.g. `code-after-mutation`.")
    severity: Severity
    description: str = Field(min_length=1, description="One sentence: what the rule flags.")
    rationale: str = Field(
        default="", description="Why it is dangerous in this execution model (SARIF help)."
    )
    messages: Mapping[str, str] = Field(min_length=1)
    hint: str = Field(min_length=1)
    hints: Mapping[str, str] = Field(default_factory=dict)

    @field_validator("messages", "hints")
    @classmethod
    def _templates_parse(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        for template in value.values():
            list(string.Formatter().parse(template))
        return dict(value)

    @model_validator(mode="after")
    def _hints_name_messages(self) -> RuleMeta:
        unknown = set(self.hints) - set(self.messages)
        if unknown:
            raise ValueError(f"hints for unknown message ids: {sorted(unknown)}")
        return self

    def render(self, message_id: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
        """The formatted (message, hint) for `message_id` with `arguments`."""
        message = self.messages[message_id].format_map(arguments)
        hint = self.hints.get(message_id, self.hint).format_map(arguments)
        return message, hint


@dataclass(frozen=True, slots=True)
class Related:
    """Another place of a finding's cause: `node` and a few words saying what it is."""

    node: tree_sitter.Node
    message: str


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem a rule found: where (a node, or explicit byte offsets), which message.

    `handler` is the handler phase the problem belongs to, when there is one.
    `related` are the other places of the same cause (a diagnostic's related
    locations). `absorbs` names findings this one stands for, as (rule id,
    node) pairs: when that rule finds a problem at exactly that node, the
    report keeps this finding only, so one cause gives one diagnostic.
    """

    message_id: str
    node: tree_sitter.Node | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)
    handler: Handler | None = None
    start_byte: int | None = None
    end_byte: int | None = None
    related: tuple[Related, ...] = ()
    absorbs: tuple[tuple[str, tree_sitter.Node], ...] = ()

    def byte_range(self) -> tuple[int, int]:
        """The (start, end) byte offsets this finding points at."""
        if self.start_byte is not None:
            return self.start_byte, self.end_byte if self.end_byte is not None else self.start_byte
        if self.node is None:
            return 0, 0
        return self.node.start_byte, self.node.end_byte


Check = Callable[["Analysis"], Iterable[Finding]]


@dataclass(frozen=True, slots=True)
class Rule:
    """A validator rule: metadata and a check. Register instances through ``register_rules``.

    `vocabulary` names the calls the rule needs the handler walk to record
    facts about (see `keep_sdk.validator.vocabulary`); the walk itself knows no
    rule's words.
    """

    meta: RuleMeta
    check: Check
    vocabulary: WalkVocabulary | None = None

    @property
    def id(self) -> str:
        """Shortcut for ``meta.id``."""
        return self.meta.id
