"""One misplaced mutation gives one diagnostic; the rest of its cause are related locations.

The property test builds workflows around one injected misplacement (a
mutation in the wrong phase, a second mutation, one in a loop, a callback or a
`try`, a used result, code after the mutation), directly, through an alias of
the operation or through a helper, among
random harmless statements, and requires exactly one error, at the injected
site: the call in the handler when a helper is involved.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk import validate
from keep_sdk.plugins import default_plugins
from keep_sdk.validator import Report, ReportSet, render_json, render_sarif, render_text
from keep_sdk.validator import validate as validate_with
from keep_sdk.validator.rules import BUILTIN_RULES
from tests.validator.cases import describe, workflow

SITE = "// site"
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())

MUTATIONS = [
    'ctx.gmail.send({ to: "a@example.com", subject: "s", body: "b" })',
    'ctx.slack.postMessage({ channel: "#c", text: "t" })',
    'ctx.sheets.appendRow({ spreadsheetId: "s", values: ["a"] })',
]
FILLERS = [
    "const v{i} = [{i}, 2].map((x) => x + 1);",
    'console.log("step", {i});',
    'if ({i} > 2) {{\n  console.log("big", {i});\n}}',
    "let w{i} = {i};\nw{i} += 1;",
    "for (const x{i} of [1, 2]) {{\n  console.log(x{i});\n}}",
]
KINDS = [
    "prepare",
    "next",
    "producer",
    "second",
    "loop",
    "try",
    "result-used",
    "code-after",
    "callback",
    "promise-all",
]


@dataclass(frozen=True)
class Injection:
    kind: str
    mutation: str
    other: str
    form: str
    before: tuple[str, ...]
    after: tuple[str, ...]


def fillers(draw: st.DrawFn, start: int) -> tuple[str, ...]:
    chosen = draw(st.lists(st.sampled_from(FILLERS), max_size=3))
    return tuple(text.format(i=start + n) for n, text in enumerate(chosen))


@st.composite
def injections(draw: st.DrawFn) -> Injection:
    mutation = draw(st.sampled_from(MUTATIONS))
    other = draw(st.sampled_from(MUTATIONS))
    kind = draw(st.sampled_from(KINDS))
    form = draw(st.sampled_from(["direct", "helper", "alias"]))
    before = fillers(draw, 0)
    after = fillers(draw, 10)
    if kind == "code-after" and not after:
        after = ('console.log("after");',)
    return Injection(kind, mutation, other, form, before, after)


def build(injection: Injection) -> str:
    """The workflow with the misplacement injected; the injected line ends with `// site`."""
    helper = ""
    call = f"await {injection.mutation}"
    before = "\n".join(injection.before)
    if injection.form == "helper":
        helper = f"async function notify(ctx) {{\n  return {injection.mutation};\n}}"
        call = "await notify(ctx)"
    elif injection.form == "alias":
        target, _, arguments = injection.mutation.partition("(")
        before = f"const op = {target};\n{before}"
        call = f"await op({arguments}"
    after = "\n".join(injection.after)
    single = f"await {injection.other};"
    prepare = "return { reservations: [], data: { items: [1, 2] } };"
    parts: dict[str, str] = {"mutate": f"{before}\n{single}"}
    if injection.kind in ("prepare", "next", "producer"):
        body = f"{before}\n{call}; {SITE}\n{after}"
        if injection.kind == "prepare":
            parts["prepare"] = f"{body}\n{prepare}"
        elif injection.kind == "next":
            parts["next_"] = body
        else:
            parts["producer"] = f"{body}\nreturn {{}};"
    elif injection.kind == "second":
        parts["mutate"] = f"{before}\n{single}\n{after}\n{call}; {SITE}"
    elif injection.kind == "loop":
        parts["mutate"] = (
            f"{before}\nfor (const item of prepared.data.items) {{\n  {call}; {SITE}\n}}"
        )
    elif injection.kind == "try":
        parts["mutate"] = (
            f"{before}\ntry {{\n  {call}; {SITE}\n}} catch (error) {{\n"
            f"  console.log(error.message);\n}}\n{after}"
        )
    elif injection.kind == "callback":
        parts["mutate"] = (
            f"{before}\nprepared.data.items.forEach(async (item) => {{\n  {call}; {SITE}\n}});"
        )
    elif injection.kind == "promise-all":
        inner = call.removeprefix("await ")
        parts["mutate"] = (
            f"{before}\nawait Promise.all([\n  {injection.other},\n  {inner}, {SITE}\n]);"
        )
    elif injection.kind == "result-used":
        parts["mutate"] = f"{before}\nconst result = {call}; {SITE}\nconsole.log(result.id);"
    else:
        head, _, tail = injection.after[0].partition("\n")
        marked = f"{head} {SITE}\n{tail}" if tail else f"{head} {SITE}"
        parts["mutate"] = "\n".join([before, f"{call};", marked, *injection.after[1:]])
    if "prepare" not in parts:
        parts["prepare"] = prepare
    return workflow(before=helper, **parts)


def site_line(source: str) -> int:
    return next(n for n, line in enumerate(source.split("\n"), start=1) if SITE in line)


@settings(max_examples=150, deadline=None)
@given(injections())
def test_one_injected_misplacement_gives_one_error_at_its_site(injection: Injection) -> None:
    source = build(injection)
    report = validate(source)
    errors = report.errors
    assert len(errors) == 1, f"{injection}\n{source}\n{describe(report)}"
    assert errors[0].line == site_line(source), f"{injection}\n{source}\n{describe(report)}"


def _only(report: Report, rule: str) -> list:
    return [d for d in report.diagnostics if d.rule == rule]


def test_second_mutation_through_a_helper_names_the_helper_and_the_first_call() -> None:
    source = workflow(
        before=(
            "async function notify(ctx) {\n"
            "  await ctx.slack.postMessage({ channel: '#c', text: 't' });\n}"
        ),
        mutate="await notify(ctx);\nconsole.log('between');\nawait notify(ctx);",
    )
    report = validate(source)
    assert [d.rule for d in report.diagnostics] == ["multiple-mutations"], describe(report)
    diagnostic = report.diagnostics[0]
    assert diagnostic.line == 16
    related = [(r.line, r.message) for r in diagnostic.related]
    assert related == [
        (2, "`ctx.slack.postMessage` in `notify`"),
        (14, "the first mutation, `ctx.slack.postMessage` through `notify`"),
        (15, "code after the mutation, which never runs"),
    ]


def test_code_in_the_catch_is_related_to_the_mutation_in_try() -> None:
    source = workflow(
        mutate="try {\n  await ctx.gmail.send({ to: 'a@example.com', subject: 's', body: 'b' });\n"
        "} catch (e) {\n  console.log(e);\n}"
    )
    report = validate(source)
    (diagnostic,) = report.diagnostics
    assert diagnostic.rule == "mutation-in-try"
    assert [(r.line, r.column) for r in diagnostic.related] == [(15, 3)]


def test_a_rule_run_alone_still_reports_what_another_would_absorb() -> None:
    """Absorbing needs the absorbing rule: without mutation-in-try, the catch code is reported."""
    source = workflow(
        mutate="try {\n  await ctx.gmail.send({ to: 'a@example.com', subject: 's', body: 'b' });\n"
        "} catch (e) {\n  console.log(e);\n}"
    )
    alone = [r for r in BUILTIN_RULES if r.id == "code-after-mutation"]
    report = validate_with(source, connectors=default_plugins().manifest(), rules=alone)
    assert [(d.rule, d.line) for d in report.diagnostics] == [("code-after-mutation", 15)]


def test_code_after_on_several_paths_is_one_diagnostic() -> None:
    source = workflow(
        mutate="if (prepared.data.a) {\n"
        "  await ctx.gmail.send({ to: 'a@example.com', subject: 's', body: 'b' });\n"
        "} else {\n  await ctx.slack.postMessage({ channel: '#c', text: 't' });\n}\n"
        "console.log('done');"
    )
    report = validate(source)
    (diagnostic,) = report.diagnostics
    assert diagnostic.rule == "code-after-mutation"
    assert diagnostic.line == 17
    assert 13 in {r.line for r in diagnostic.related}


def test_related_locations_in_text_json_and_sarif() -> None:
    source = workflow(
        mutate="await ctx.gmail.send({ to: 'a@example.com', subject: 's', body: 'b' });\n"
        "await ctx.slack.postMessage({ channel: '#c', text: 't' });"
    )
    report = validate(source, filename="two.js")
    (diagnostic,) = report.diagnostics
    (related,) = diagnostic.related
    assert (related.line, related.column) == (12, 7)
    text = render_text(report, source)
    assert "  note: two.js:12:7: the first mutation, `ctx.gmail.send`" in text.split("\n")
    data = json.loads(render_json([report]))
    jsonschema.validate(data, ReportSet.json_schema())
    assert data["reports"][0]["diagnostics"][0]["related"] == [
        {
            "message": "the first mutation, `ctx.gmail.send`",
            "line": 12,
            "column": 7,
            "endLine": 12,
            "endColumn": related.end_column,
        }
    ]
    log = json.loads(render_sarif([report], BUILTIN_RULES))
    jsonschema.validate(log, SARIF_SCHEMA)
    (result,) = log["runs"][0]["results"]
    (location,) = result["relatedLocations"]
    assert location["physicalLocation"]["region"]["startLine"] == 12
    assert location["message"]["text"] == "the first mutation, `ctx.gmail.send`"
