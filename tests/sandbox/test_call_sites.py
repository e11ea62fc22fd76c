"""Approved call sites: the host performs only a ctx call the reviewed source shows as an
ordinary call of the phase, in both isolations (issue 28).

Each attack hides a mutation behind a name built at run time; whatever the validator
says about the script, the run never requests the hidden mutation, and when the hidden
path runs the phase fails closed with a message naming the site.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.model import HandlerPhase
from keep_sdk.sandbox import (
    InProcessIsolation,
    LogicFailure,
    MutationRequested,
    PhaseResult,
    ProcessIsolation,
)
from keep_sdk.validator import validate
from tests.sandbox.helpers import MANIFEST, RecordingHost, request

VISIBLE = "return ctx.sheets.appendRow({ values: ['visible'] });"
HIDDEN = "ctx.sheets.appendRow({ values: ['hidden'] })"


def workflow(mutate: str) -> str:
    return (
        "export default Keep.workflow({\n"
        '  topics: { "email.received": {} },\n'
        "  consumers: { c: Keep.consumer({\n"
        '    subscribe: ["email.received"],\n'
        "    async prepare(ctx, state) { return {}; },\n"
        f"    async mutate(ctx, prepared) {{\n{mutate}\n}},\n"
        "    async next(ctx, prepared, mutationResult) { return null; },\n"
        "  }) },\n"
        "});\n"
    )


ATTACKS = {
    "thenable-joined-key": (
        "const t = {}; t[['th', 'en'].join('')] = (resolve) => resolve(" + HIDDEN + ");\n"
        "await t;\n" + VISIBLE
    ),
    "computed-tojson": (
        "const o = {}; o['to' + 'JSON'] = () => " + HIDDEN + ";\nJSON.stringify(o);\n" + VISIBLE
    ),
    "aliased-define-property": (
        "const def = Object.defineProperty; const o = {};\n"
        "def(o, 'v', { get: () => " + HIDDEN + " });\n"
        "await o.v;\n" + VISIBLE
    ),
    "proxy-by-computed-global": (
        "const P = globalThis['Pro' + 'xy'];\n"
        "const p = new P({}, { get: () => " + HIDDEN + " });\n"
        "await p.anything;\n" + VISIBLE
    ),
    "destructured-define-property-getter": (
        "const { defineProperty } = Object; const o = {};\n"
        "defineProperty(o, 'v', { get() { return " + HIDDEN + "; } });\n"
        "await o.v;\n" + VISIBLE
    ),
    "string-object-own-tostring": (
        "const s = new String('x'); s['to' + 'String'] = () => { " + HIDDEN + "; return 'x'; };\n"
        "const text = `${s}`;\n" + VISIBLE
    ),
    "operation-as-getter-itself": (
        "const o = {}; Object.defineProperty(o, 'v', { get: ctx.sheets.appendRow });\n"
        "await o.v;\n" + VISIBLE
    ),
    "bound-operation-as-getter": (
        "let b; try { b = ctx.sheets.appendRow.bind(ctx.sheets, { values: ['hidden'] }); }\n"
        "catch (e) { b = () => " + HIDDEN + "; }\n"
        "const o = {}; Object.defineProperty(o, 'v', { get: b });\n"
        "return ctx.sheets.appendRow({ values: ['visible', o.v] });"
    ),
}


@pytest.fixture(scope="module", params=["in_process", "process"])
def isolation(request: pytest.FixtureRequest) -> Iterator[InProcessIsolation | ProcessIsolation]:
    if request.param == "in_process":
        yield InProcessIsolation()
    else:
        with ProcessIsolation() as pool:
            yield pool


def run_validated(source: str, isolation: InProcessIsolation | ProcessIsolation) -> PhaseResult:
    report = validate(source, connectors=MANIFEST)
    assert report.workflow is not None
    sites = report.workflow.call_sites("c", HandlerPhase.MUTATE)
    assert sites is not None
    phase = request(source, "mutate", call_sites=sites, prepared={})
    return isolation.run(phase, RecordingHost())


def never_hidden(result: PhaseResult) -> None:
    outcome = result.outcome
    if isinstance(outcome, MutationRequested):
        assert outcome.arguments == {"values": ["visible"]}, outcome
    requested = [c for c in result.trace.calls if c.status == "requested"]
    assert all(c.arguments == {"values": ["visible"]} for c in requested), requested


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_hidden_mutation_fails_closed_naming_its_site(
    name: str, isolation: InProcessIsolation | ProcessIsolation
) -> None:
    result = run_validated(workflow(ATTACKS[name]), isolation)
    never_hidden(result)
    outcome = result.outcome
    assert isinstance(outcome, LogicFailure), outcome
    assert "not a ctx call site the validator approved" in outcome.message, outcome
    assert "ctx.sheets.appendRow was called" in outcome.message
    assert any(c.status == "refused" for c in result.trace.calls)


def test_a_script_shadowing_the_return_marker_cannot_make_the_host_call_it(
    isolation: InProcessIsolation | ProcessIsolation,
) -> None:
    source = (
        "const __keepReturn = (line, column, value) => { globalThis.leak = true; return 'x'; };\n"
        + workflow("return ctx.sheets.appendRow({ values: ['visible'] });")
    )
    assert "reserved-name" in {d.rule for d in validate(source, connectors=MANIFEST).diagnostics}
    result = run_validated(source, isolation)
    assert result.outcome == MutationRequested(
        connector="sheets",
        operation="appendRow",
        arguments={"values": ["visible"]},
        line=result.outcome.line,
        column=result.outcome.column,  # type: ignore[union-attr]
    )


def test_the_visible_mutation_is_requested_at_its_site(
    isolation: InProcessIsolation | ProcessIsolation,
) -> None:
    result = run_validated(workflow("const x = 1;\n" + VISIBLE), isolation)
    assert isinstance(result.outcome, MutationRequested), result.outcome
    assert result.outcome.arguments == {"values": ["visible"]}


HOOKS = {
    "getter": "const g = {{ get v() {{ {call}; return 1; }} }}; {use}g.v;",
    "tojson": "const g = {{ toJSON() {{ {call}; return 1; }} }}; {use}JSON.stringify(g);",
    "thenable": "const g = {{ then(r) {{ {call}; r(1); }} }}; {use}await g;",
    "replacer": "{use}JSON.stringify({{ a: 1 }}, (k, v) => {{ {call}; return v; }});",
    "comparator": "{use}[2, 1].sort((a, b) => {{ {call}; return a - b; }});",
    "reviver": "{use}JSON.parse('[1]', (k, v) => {{ {call}; return v; }});",
    "tostring": "const g = {{ toString() {{ {call}; return 'x'; }} }}; {use}`${{g}}`;",
    "valueof": "const g = {{ valueOf() {{ {call}; return 1; }} }}; {use}(g + 1);",
    "proxy": "const g = new Proxy({{}}, {{ get() {{ {call}; return 1; }} }}); {use}g.x;",
    "toprimitive": "const g = {{ [Symbol.toPrimitive]() {{ {call}; return 1; }} }}; {use}(+g);",
    "class-getter": "class K {{ get v() {{ {call}; return 1; }} }} {use}new K().v;",
}
KEYS = {
    "plain": "ctx.sheets.appendRow",
    "computed": "ctx.sheets['append' + 'Row']",
    "alias": "(() => {{ const a = ctx.sheets; return a.appendRow; }})()",
    "destructured": "(({{ appendRow }}) => appendRow)(ctx.sheets)",
    "wrapped": "((f) => (x) => f(x))(ctx.sheets.appendRow)",
}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    hook=st.sampled_from(sorted(HOOKS)),
    key=st.sampled_from(sorted(KEYS)),
    wrap=st.booleans(),
    payload=st.text(alphabet="abc", min_size=1, max_size=5),
)
def test_only_the_visible_mutation_is_ever_performed(
    hook: str,
    key: str,
    wrap: bool,
    payload: str,
    isolation: InProcessIsolation | ProcessIsolation,
) -> None:
    callee = KEYS[key].replace("{{", "{").replace("}}", "}")
    call = f"{callee}({{ values: ['hidden', '{payload}'] }})"
    gadget = HOOKS[hook].format(call=call, use="const used = " if wrap else "")
    result = run_validated(workflow(gadget + "\n" + VISIBLE), isolation)
    never_hidden(result)
    if not isinstance(result.outcome, MutationRequested):
        assert result.outcome.kind in ("logic_error", "limit_exceeded"), result.outcome
