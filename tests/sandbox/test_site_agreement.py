"""The validator and the runtime agree on call sites (issue 28): a script the validator
accepts never has a ctx call refused at run time for its site, and a ctx call the
runtime would refuse makes the validator refuse the script.

Scripts are generated from templates (a helper called directly, passed by name, an
inline arrow, an async helper, a nested helper, a promise continuation, a getter, a
comparator, a replacer); every valid fixture of the project is run too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from keep_sdk.model import HandlerPhase, HostPolicy
from keep_sdk.plugins import KeepPlugins
from keep_sdk.sandbox import InProcessIsolation, PhaseRequest, PhaseResult, ProcessIsolation
from keep_sdk.validator import validate
from tests.sandbox.helpers import MANIFEST

ROOT = Path(__file__).parents[2]
CALL = "ctx.gmail.getById({ id })"
SITE_REFUSAL = "not a ctx call site the validator approved"
POLICY = HostPolicy()

FORMS = {
    "direct": ("const one = (id) => {call};", "await one('a');"),
    "by-name-map": ("const one = (id) => {call};", "await Promise.all(ids.map(one));"),
    "declared-by-name": (
        "async function one(id) {{ return {call}; }}",
        "await Promise.all(ids.map(one));",
    ),
    "inline-arrow": ("", "await Promise.all(ids.map((id) => {call}));"),
    "for-each-named": (
        "const out = []; function one(id) {{ out.push({call}); }}",
        "ids.forEach(one); await Promise.all(out);",
    ),
    "async-helper": (
        "async function one(id) {{ const r = await {call}; return r; }}",
        "for (const id of ids) await one(id);",
    ),
    "nested-helper": (
        "const inner = (id) => {call}; const outer = (id) => inner(id);",
        "await Promise.all(ids.map(outer));",
    ),
    "then-named": (
        "const one = () => {{ const id = 'a'; return {call}; }};",
        "await Promise.resolve().then(one);",
    ),
    "promise-executor": (
        "const exec = (resolve) => {{ const id = 'a'; resolve({call}); }};",
        "await new Promise(exec);",
    ),
    "filter-inline": ("", "ids.filter((id) => {{ {call}; return true; }});"),
    "getter": ("const box = {{ get v() {{ const id = 'a'; return {call}; }} }};", "await box.v;"),
    "class-getter": (
        "class Box {{ get v() {{ const id = 'a'; return {call}; }} }}",
        "await new Box().v;",
    ),
    "comparator": ("", "ids.sort((a, b) => {{ const id = a; {call}; return 0; }});"),
    "replacer": (
        "",
        "JSON.stringify({{ a: 1 }}, (k, v) => {{ const id = k; {call}; return v; }});",
    ),
    "tojson": (
        "const d = {{ toJSON() {{ const id = 'a'; {call}; return 1; }} }};",
        "JSON.stringify(d);",
    ),
    "never-called": ("const later = (id) => {call};", "typeof later;"),
    "hook-without-ctx": (
        "const d = {{ get n() {{ return 1; }}, toJSON() {{ return 2; }} }};",
        "JSON.stringify(d); [3, 1].sort((a, b) => a - b); await one2('a');",
    ),
}
HELPER2 = "const one2 = (id) => {call};"


def script(form: str, place: str, count: int) -> str:
    """`form` in a producer handler; `place` ``block`` nests it in a block and a loop."""
    helpers, body = FORMS[form]
    helpers = helpers.format(call=CALL)
    body = body.format(call=CALL)
    if form == "hook-without-ctx":
        helpers += " " + HELPER2.format(call=CALL)
    ids = ", ".join(f"'i{n}'" for n in range(count))
    code = f"{helpers}\n{body}"
    if place == "block":
        code = f"if (ids.length) {{\n  for (let round = 0; round < 1; round++) {{\n{code}\n  }}\n}}"
    return (
        "export default Keep.workflow({\n  topics: { t: {} },\n"
        "  producers: { h: { schedule: { interval: '5m' }, handler: async (ctx, state) => {\n"
        f"const ids = [{ids}];\n{code}\nreturn {{}};\n  }} }} }},\n}});\n"
    )


class Host:
    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        if name in ("peek", "getByIds"):
            event = {
                "messageId": "m1",
                "title": "t",
                "payload": {"from": "a@example.com", "subject": "s", "customer": "c", "total": 1},
            }
            return [event]
        if name.endswith((".search", ".listRows")):
            return []
        return {"id": "x", "from": "a@example.com", "subject": "s", "rowId": "r"}


def site_refusals(result: PhaseResult) -> list[str]:
    message = getattr(result.outcome, "message", "") or ""
    refused = [c.error or "" for c in result.trace.calls if c.status == "refused"]
    return [m for m in [message, *refused] if SITE_REFUSAL in m]


def run_valid(source: str, isolation: InProcessIsolation | ProcessIsolation) -> PhaseResult:
    report = validate(source, connectors=MANIFEST)
    assert report.workflow is not None
    request = PhaseRequest(
        source=source,
        handler="h",
        phase=HandlerPhase.PRODUCER,
        manifest=MANIFEST,
        policy=POLICY,
        call_sites=report.workflow.call_sites("h", HandlerPhase.PRODUCER),
    )
    return isolation.run(request, Host())


ISOLATION = InProcessIsolation()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    form=st.sampled_from(sorted(FORMS)),
    place=st.sampled_from(["handler", "block"]),
    count=st.integers(min_value=1, max_value=3),
)
def test_a_valid_script_never_has_a_ctx_call_refused_for_its_site(
    form: str, place: str, count: int
) -> None:
    source = script(form, place, count)
    report = validate(source, connectors=MANIFEST)
    result = run_valid(source, ISOLATION)
    refusals = site_refusals(result)
    if report.ok:
        assert refusals == [], (source, refusals)
        assert result.outcome.kind == "completed", (source, result.outcome)
    elif refusals:
        assert not report.ok


@pytest.mark.parametrize(
    "form", ["getter", "class-getter", "comparator", "replacer", "tojson", "never-called"]
)
def test_a_ctx_call_the_runtime_refuses_is_refused_by_the_validator(form: str) -> None:
    report = validate(script(form, "handler", 2), connectors=MANIFEST)
    assert "implicit-code" in report.rules()


@pytest.mark.parametrize(
    "form",
    [
        "direct",
        "by-name-map",
        "declared-by-name",
        "inline-arrow",
        "for-each-named",
        "async-helper",
        "nested-helper",
        "then-named",
        "promise-executor",
        "hook-without-ctx",
    ],
)
def test_ordinary_forms_are_valid_and_run_in_both_isolations(form: str) -> None:
    source = script(form, "handler", 2)
    report = validate(source, connectors=MANIFEST)
    assert report.ok, report.errors
    with ProcessIsolation() as pool:
        for isolation in (ISOLATION, pool):
            result = run_valid(source, isolation)
            assert result.outcome.kind == "completed", result.outcome
            assert any(c.name == "gmail.getById" and c.status == "ok" for c in result.trace.calls)


CORPUS = sorted(
    [
        *(ROOT / "fixtures" / "workflows" / "valid").glob("*.js"),
        *(ROOT / "fixtures" / "workflows" / "demo").glob("*.js"),
        *(ROOT / "fixtures" / "workflows" / "durable").glob("*.js"),
        *(ROOT / "fixtures" / "spec").glob("*.js"),
    ]
)
PLUGINS = KeepPlugins(load_entry_points=False)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_valid_fixture_has_a_ctx_call_refused_for_its_site(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    connectors = PLUGINS.manifest()
    report = validate(source, connectors=connectors)
    assert report.ok, f"{path.name} is a valid fixture: {report.errors}"
    workflow = report.workflow
    assert workflow is not None
    data = {"reservations": [], "data": {"to": "a@example.com", "row": ["a"], "text": "t"}}
    phases = [(p.name, HandlerPhase.PRODUCER) for p in workflow.producers] + [
        (c.name, phase)
        for c in workflow.consumers
        for phase in (HandlerPhase.PREPARE, HandlerPhase.MUTATE, HandlerPhase.NEXT)
    ]
    for handler, phase in phases:
        request = PhaseRequest(
            source=source,
            handler=handler,
            phase=phase,
            manifest=connectors,
            subscribed_topics=tuple(workflow.topics),
            publish_topics=tuple(workflow.topics),
            state={},
            prepared=data,
            mutation_result={"status": "applied", "result": {"rowId": "r"}},
            call_sites=workflow.call_sites(handler, phase),
        )
        result = ISOLATION.run(request, Host())
        assert site_refusals(result) == [], (path.name, handler, phase, result.outcome)
