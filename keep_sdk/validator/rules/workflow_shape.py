"""workflow-shape: the script does not declare a workflow the runtime can load.

What it does: checks that the module's only export is
``export default Keep.workflow({...})`` with literal ``topics``, ``producers``
and ``consumers``; that every producer is a function or
``{ schedule, handler }`` with a valid schedule; and that every consumer
declares ``subscribe`` and the three phases ``prepare``, ``mutate`` and
``next`` as functions.

Why is this bad? The runtime reads the workflow's shape from the same
extraction; a shape it cannot read means handlers that never run, schedules
that never fire, or a script that cannot be deployed at all.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why

__all__ = ["rule"]

_SKELETON = (
    'export default Keep.workflow({{ name: "...", topics: {{ "topic.name": {{}} }}, '
    "producers: {{ ... }}, consumers: {{ ... }} }})"
)

META = RuleMeta(
    id="workflow-shape",
    severity=Severity.ERROR,
    description="The workflow declaration is missing, malformed, or not statically readable.",
    rationale=why(__doc__),
    messages={
        "no-default-export": "the script has no `export default Keep.workflow({{...}})`",
        "named-export": "only `export default Keep.workflow({{...}})` may be exported",
        "default-declaration": "`export default` must export `Keep.workflow({{...}})`",
        "not-keep-workflow": "`export default` must export `Keep.workflow({{...}})`",
        "workflow-not-object": "`Keep.workflow` takes exactly one object literal",
        "computed-key": "{where} has a key that is not a plain name or string",
        "spread": "{where} uses `...` spread, which cannot be read without running the script",
        "duplicate-key": "`{key}` is declared more than once in {where}",
        "bad-name": "the workflow's `name` must be a non-empty string literal",
        "reserved-name": "workflow names starting with `{prefix}` are reserved for the host",
        "unknown-key": "`{key}` is not a known key of {where}",
        "no-handlers": "the workflow declares no producers and no consumers",
        "topics-not-object": "`topics` must be an object literal whose keys are the topic names",
        "no-topics": "the workflow declares no `topics`",
        "section-not-object": "`{section}` must be an object literal keyed by handler name",
        "not-string-array": "{where} must be an array of string literals",
        "producer-not-function": (
            "{where} must be a function `async (ctx, state) => ...` or `{{ schedule, handler }}`"
        ),
        "producer-without-handler": "{where} has no `handler` function",
        "producer-without-schedule": (
            "{where} is an object without a `schedule`; an object producer must say when it runs"
        ),
        "not-a-function": "{where} must be a function",
        "bad-schedule": "the schedule of {where} is invalid: {detail}",
        "consumer-not-object": (
            "{where} must be `Keep.consumer({{ subscribe, prepare, mutate, next }})`"
        ),
        "consumer-without-subscribe": "{where} has no `subscribe` list",
        "empty-subscribe": "{where} subscribes to no topic",
        "consumer-missing-phase": "{where} lacks {missing}; a consumer declares all three phases",
    },
    hint=f"Declare the workflow as one literal the runtime can read: {_SKELETON}.",
    hints={
        "no-default-export": f"End the script with {_SKELETON}.",
        "named-export": (
            "Remove `export` from this declaration (keep it as a module-level constant or "
            "function); the script exports only the workflow."
        ),
        "default-declaration": f"Export the workflow object instead: {_SKELETON}.",
        "not-keep-workflow": f"Wrap the declaration in Keep.workflow: {_SKELETON}.",
        "workflow-not-object": (
            "Pass the declaration inline: Keep.workflow({{ topics: {{...}}, producers: {{...}}, "
            "consumers: {{...}} }})."
        ),
        "computed-key": "Write the key as a plain identifier or a string literal.",
        "spread": "Write the entries out in the literal instead of spreading another object.",
        "duplicate-key": "Keep one `{key}` entry and delete the other.",
        "bad-name": 'Write the name as a string literal: name: "email-to-sheets".',
        "reserved-name": "Choose a name that does not start with `{prefix}`.",
        "unknown-key": "Use only these keys in {where}: {allowed}; fix the spelling or remove it.",
        "no-handlers": (
            "Add at least one producer (to bring events in) or one consumer (to act on them)."
        ),
        "no-topics": (
            'Declare every topic the handlers use: topics: {{ "email.received": {{}} }}.'
        ),
        "topics-not-object": 'Declare topics as an object: topics: {{ "email.received": {{}} }}.',
        "section-not-object": (
            "Write `{section}` as an object literal: {section}: {{ handlerName: ... }}."
        ),
        "not-string-array": 'Write it as an array of string literals: ["email.received"].',
        "producer-not-function": (
            'Write it as `{{ schedule: {{ interval: "5m" }}, handler: async (ctx, state) => '
            "{{ ...; return newState; }} }}` or as a bare async function."
        ),
        "producer-without-handler": (
            "Add `handler: async (ctx, state) => {{ ...; return newState; }}` to {where}."
        ),
        "producer-without-schedule": (
            'Add schedule: {{ interval: "5m" }} (or {{ cron: "*/5 * * * *" }}) to {where}, or '
            "write the producer as a bare async function to run it on the host's default interval."
        ),
        "not-a-function": (
            "Make it an (async) function literal, or the name of a function declared at the top "
            "level of the script with `function` or `const` (not `let` or `var`)."
        ),
        "bad-schedule": (
            'Use schedule: {{ interval: "5m" }} (a number followed by s, m, h or d) or '
            'schedule: {{ cron: "*/5 * * * *" }}, not both.'
        ),
        "consumer-not-object": (
            'Write it as Keep.consumer({{ subscribe: ["topic"], async prepare(ctx, state) '
            "{{...}}, async mutate(ctx, prepared) {{...}}, async next(ctx, prepared, "
            "mutationResult) {{...}} }})."
        ),
        "consumer-without-subscribe": (
            'Add subscribe: ["topic.name"] listing the topics whose events {where} consumes.'
        ),
        "empty-subscribe": "List at least one declared topic in `subscribe`.",
        "consumer-missing-phase": (
            "Add the missing phase(s); a consumer with nothing to mutate still declares "
            "`async mutate(ctx, prepared) {{}}`, and `next` may simply return nothing."
        ),
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """One finding per shape problem the extraction met."""
    for problem in analysis.shape_problems:
        yield Finding(problem.message_id, problem.node, problem.arguments)


rule = Rule(META, check)
