"""Rules own their vocabulary: the walk records what rules declare and knows no rule's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from keep_sdk.validator import Finding, GlobalUseKind, Rule, RuleMeta, Severity, analyze, validate
from keep_sdk.validator.rules import BUILTIN_RULES, BUILTIN_VOCABULARY
from keep_sdk.validator.rules.dynamic_capability import INSPECTING_GLOBALS
from keep_sdk.validator.rules.nondeterministic_mutate import NONDETERMINISTIC_CALLS
from keep_sdk.validator.rules.shared_state import MUTATING_METHODS, OBJECT_WRITERS
from keep_sdk.validator.vocabulary import WalkVocabulary
from tests.validator.cases import workflow

WALK = Path(__file__).parents[2] / "keep_sdk" / "validator"
WALK_SOURCES = [WALK / "walker.py", *sorted((WALK / "walk").glob("*.py"))]
RULE_WORDS = sorted(
    {*MUTATING_METHODS, *OBJECT_WRITERS, *NONDETERMINISTIC_CALLS, *INSPECTING_GLOBALS}
    - {"set", "add", "delete", "clear", "fill", "sort", "Date"}
)
"""Words of the rules' vocabularies that do not also occur as ordinary English or JS words."""


@pytest.mark.parametrize("word", RULE_WORDS)
def test_the_walk_does_not_spell_rule_vocabulary(word: str) -> None:
    for path in WALK_SOURCES:
        assert f'"{word}"' not in path.read_text(), f"{path.name} names {word!r}"


def test_builtin_vocabulary_is_what_the_rules_declare() -> None:
    assert set(BUILTIN_VOCABULARY.calls) == NONDETERMINISTIC_CALLS
    assert BUILTIN_VOCABULARY.receiver_writers == MUTATING_METHODS
    assert BUILTIN_VOCABULARY.argument_writers == OBJECT_WRITERS
    assert BUILTIN_VOCABULARY.inspecting_globals == INSPECTING_GLOBALS
    declared = [rule.id for rule in BUILTIN_RULES if rule.vocabulary is not None]
    assert declared == ["shared-state", "dynamic-capability", "nondeterministic-mutate"]


def test_merge_unions_entries_and_keeps_the_first_kind() -> None:
    first = WalkVocabulary(
        calls={"a.b": GlobalUseKind.NONDETERMINISTIC}, receiver_writers=frozenset({"x"})
    )
    second = WalkVocabulary(
        calls={"a.b": GlobalUseKind.FORBIDDEN, "c": GlobalUseKind.FORBIDDEN},
        argument_writers=frozenset({"d.e"}),
    )
    merged = first.merge(second)
    assert dict(merged.calls) == {
        "a.b": GlobalUseKind.NONDETERMINISTIC,
        "c": GlobalUseKind.FORBIDDEN,
    }
    assert merged.receiver_writers == {"x"}
    assert merged.global_roots == {"a", "c", "d"}


def test_analyze_records_what_the_builtin_rules_ask_for() -> None:
    source = workflow(
        mutate='const at = Date.now();\nawait ctx.gmail.send({ to: "a", subject: "s", body: "b" });'
    )
    uses = analyze(source).globals
    assert [(u.name, u.kind) for u in uses] == [("Date.now", GlobalUseKind.NONDETERMINISTIC)]


UPSERT = Rule(
    RuleMeta(
        id="acme-upsert",
        severity=Severity.WARNING,
        description="Module objects changed through `upsert`.",
        messages={"upsert": "`{name}` changed"},
        hint="Do not.",
    ),
    lambda analysis: (
        Finding("upsert", s.node, {"name": s.name}, s.handler)
        for s in analysis.shared_state
        if s.access == "mutate"
    ),
    WalkVocabulary(receiver_writers=frozenset({"upsert"})),
)


def test_a_plugin_rule_extends_what_the_walk_records() -> None:
    source = workflow(before="const CACHE = {};", next_="CACHE.upsert(prepared.data.id);")
    assert "acme-upsert" in validate(source, rules=[*BUILTIN_RULES, UPSERT]).rules()
    assert "shared-state" not in validate(source).rules()
