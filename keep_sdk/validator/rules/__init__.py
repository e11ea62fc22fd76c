"""The built-in rule catalog: one module per rule, named after its id."""

from __future__ import annotations

from typing import TYPE_CHECKING

from keep_sdk.validator.rules import (
    analysis_limit,
    cached_external_data,
    code_after_mutation,
    dynamic_capability,
    event_title,
    forbidden_global,
    implicit_code,
    invalid_arguments,
    legacy_format,
    message_id_not_identity,
    missing_message_id,
    multiple_mutations,
    mutation_in_try,
    mutation_result_used,
    nondeterministic_mutate,
    phase_forbidden_call,
    prepare_result_shape,
    reserved_event_lost,
    reserved_name,
    result_shape,
    shared_state,
    stateful_regexp,
    syntax_error,
    undeclared_topic,
    undefined_name,
    unknown_operation,
    unsubscribed_topic,
    workflow_shape,
)
from keep_sdk.validator.vocabulary import WalkVocabulary as _Vocabulary

if TYPE_CHECKING:
    from keep_sdk.validator.rule import Rule

__all__ = ["BUILTIN_RULES", "BUILTIN_VOCABULARY"]

BUILTIN_RULES: tuple[Rule, ...] = (
    syntax_error.rule,
    workflow_shape.rule,
    legacy_format.rule,
    undeclared_topic.rule,
    unsubscribed_topic.rule,
    shared_state.rule,
    phase_forbidden_call.rule,
    code_after_mutation.rule,
    multiple_mutations.rule,
    mutation_result_used.rule,
    mutation_in_try.rule,
    unknown_operation.rule,
    invalid_arguments.rule,
    result_shape.rule,
    dynamic_capability.rule,
    implicit_code.rule,
    forbidden_global.rule,
    reserved_name.rule,
    undefined_name.rule,
    analysis_limit.rule,
    nondeterministic_mutate.rule,
    event_title.rule,
    missing_message_id.rule,
    prepare_result_shape.rule,
    reserved_event_lost.rule,
    message_id_not_identity.rule,
    stateful_regexp.rule,
    cached_external_data.rule,
)
"""Every built-in rule, in the order of the catalog in DESIGN.md (`analysis-limit` after the
last error rule)."""

BUILTIN_VOCABULARY = _Vocabulary().merge(
    *(rule.vocabulary for rule in BUILTIN_RULES if rule.vocabulary is not None)
)
"""What the built-in rules ask the handler walk to record."""
