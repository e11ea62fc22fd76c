"""Issue 16, adversarial: every value crossing the boundary is checked once, symmetrically.

Each case runs in both isolations (in process and in a pooled worker process).
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Iterator

import pytest
from pydantic import JsonValue

from keep_sdk.model import HandlerPhase, HostPolicy, SandboxLimits
from keep_sdk.sandbox import (
    Completed,
    InternalFailure,
    Limit,
    LimitFailure,
    LogicFailure,
    MutationRequested,
    ProcessIsolation,
    run_phase,
)
from keep_sdk.sandbox.outcome import MESSAGE_LIMIT
from tests.sandbox.boundary_helpers import Isolated, TopicHost
from tests.sandbox.helpers import FAST_LIMITS, consumer, producer, request

DEFAULT_POLICY = HostPolicy()


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessIsolation]:
    with ProcessIsolation(prestart=1) as isolation:
        yield isolation


@pytest.fixture(params=["in_process", "process"])
def isolated(request: pytest.FixtureRequest, pool: ProcessIsolation) -> Isolated:
    return Isolated(pool if request.param == "process" else None)


def _publish(payload_js: str) -> str:
    return producer(
        f"await ctx.publish('row.created', {{ title: 't', payload: {payload_js} }});\nreturn 1;"
    )


def _peek() -> str:
    return consumer(
        prepare="const [e] = await ctx.peek('row.created', { limit: 1 });\nreturn e.payload;"
    )


def _round_trip(isolated: Isolated, payload_js: str, policy: HostPolicy) -> tuple[object, object]:
    """Publish `payload_js`, then peek it back; return both outcomes."""
    host = TopicHost()
    published = isolated(request(_publish(payload_js), policy=policy), host).outcome
    if not isinstance(published, Completed):
        return published, None
    peeked = isolated(
        request(_peek(), HandlerPhase.PREPARE, policy=policy, subscribed_topics=("row.created",)),
        host,
    ).outcome
    return published, peeked


# 1. Values JSON cannot round-trip


def test_json_raw_json_is_not_in_the_realm(isolated: Isolated) -> None:
    source = producer("return [typeof JSON.rawJSON, typeof JSON.isRawJSON];")
    outcome = isolated(request(source), TopicHost()).outcome
    assert outcome == Completed(result=["undefined", "undefined"])


def test_an_unsafe_integer_is_refused_at_the_publish_with_its_path(isolated: Isolated) -> None:
    host = TopicHost()
    source = _publish("{ items: [0, 0, 0, { price: 2 ** 53 }] }")
    outcome = isolated(request(source), host).outcome
    assert isinstance(outcome, LogicFailure)
    assert outcome.message.startswith("ctx.publish: `event.payload.items[3].price` is the integer")
    assert "Number.MAX_SAFE_INTEGER" in outcome.message
    assert outcome.line == 3
    assert host.events == []


def test_the_largest_safe_integers_round_trip(isolated: Isolated) -> None:
    payload = "[Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 1e21, 5e-324, -0]"
    published, peeked = _round_trip(isolated, payload, DEFAULT_POLICY)
    assert isinstance(published, Completed)
    expected = Completed(result=[2**53 - 1, -(2**53 - 1), 1e21, 5e-324, 0])
    assert peeked == expected


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (float("inf"), "`result.x` is Infinity"),
        (float("nan"), "`result.x` is NaN"),
        (10**400, "`result.x` is an integer outside"),
        (1e20, "`result.x` is 1e+20, an integer beyond"),
        ("\ud83d", "`result.x` holds a lone UTF-16 surrogate"),
    ],
)
def test_a_connector_value_that_is_not_strict_json_never_reaches_the_script(
    isolated: Isolated, value: JsonValue, shown: str
) -> None:
    host = TopicHost(read_result={"x": value})
    source = producer("const r = await ctx.gmail.search({});\nreturn 'seen';")
    outcome = isolated(request(source), host).outcome
    assert isinstance(outcome, InternalFailure)
    assert "ctx.gmail.search returned a value the sandbox cannot pass" in outcome.message
    assert shown in outcome.message


# 2. Lone surrogates


def test_a_thrown_message_with_a_lone_surrogate_is_kept_as_valid_text(isolated: Isolated) -> None:
    outcome = isolated(request(producer("throw new Error('bad \\uD800 half');")), None).outcome
    assert isinstance(outcome, LogicFailure)
    assert outcome.message == "Error: bad \ufffd half"
    outcome.message.encode("utf-8")


def test_a_log_line_with_a_lone_surrogate_is_kept_as_valid_text(isolated: Isolated) -> None:
    result = isolated(request(producer("console.log('x\\uDC00y');\nreturn 1;")), None)
    assert result.outcome == Completed(result=1)
    assert [line.text for line in result.trace.console] == ["x\ufffdy"]


@pytest.mark.parametrize(
    ("phase", "source", "path"),
    [
        ("producer", _publish("{ s: 'a\\uD800' }"), "ctx.publish: `event.payload.s`"),
        ("producer", producer("return { cursor: '\\uDFFF' };"), "`state.cursor`"),
        (
            "prepare",
            consumer(prepare="return { reservations: [], data: { ['k\\uD800']: 1 } };"),
            "`result.data[",
        ),
        (
            "mutate",
            consumer(mutate="await ctx.gmail.send({ to: '\\uD800' });"),
            "ctx.gmail.send: `argument.to`",
        ),
    ],
)
def test_a_value_with_a_lone_surrogate_is_refused_with_its_path(
    isolated: Isolated, phase: str, source: str, path: str
) -> None:
    host = TopicHost()
    outcome = isolated(request(source, phase), host).outcome
    assert isinstance(outcome, LogicFailure), outcome
    assert path in outcome.message
    assert "lone UTF-16 surrogate" in outcome.message
    assert host.events == []


def test_truncation_never_splits_an_emoji(isolated: Isolated) -> None:
    policy = HostPolicy(sandbox=FAST_LIMITS.model_copy(update={"max_log_bytes": 64 * 1024}))
    source = producer(
        "console.log('a'.repeat(8191) + '\\u{1F600}');\n"
        "throw new Error('b'.repeat(1999) + '\\u{1F600}'.repeat(10));"
    )
    result = isolated(request(source, policy=policy), None)
    line = result.trace.console[0].text
    assert line.endswith("a…[truncated]")
    assert isinstance(result.outcome, LogicFailure)
    assert result.outcome.message.endswith("…[truncated]")
    result.outcome.message.encode("utf-8")
    line.encode("utf-8")


# 3. Symmetric limits


def test_a_large_japanese_payload_that_is_published_can_be_peeked(isolated: Isolated) -> None:
    published, peeked = _round_trip(isolated, "'日本語'.repeat(100000)", DEFAULT_POLICY)
    assert published == Completed(result=1)
    assert peeked == Completed(result="日本語" * 100_000)


def test_a_payload_too_large_for_a_peek_is_refused_at_the_publish(isolated: Isolated) -> None:
    published, _ = _round_trip(isolated, "'日本語'.repeat(116500)", DEFAULT_POLICY)
    assert isinstance(published, LimitFailure)
    assert published.limit is Limit.VALUE_SIZE
    assert "less 512" in published.message


@pytest.mark.parametrize(("levels", "accepted"), [(62, True), (63, False)])
def test_nesting_is_measured_the_same_way_at_publish_and_peek(
    isolated: Isolated, levels: int, accepted: bool
) -> None:
    deep = "[" * levels + "]" * levels
    published, peeked = _round_trip(isolated, deep, DEFAULT_POLICY)
    if accepted:
        assert published == Completed(result=1)
        assert peeked == Completed(result=json.loads(deep))
    else:
        assert isinstance(published, LimitFailure)
        assert published.limit is Limit.VALUE_DEPTH
        assert "`event.payload" in published.message


def test_a_state_at_the_limit_is_accepted_when_it_is_passed_back(isolated: Isolated) -> None:
    cap = FAST_LIMITS.max_state_bytes
    text = "é" * ((cap - 2) // 2)
    first = isolated(request(producer(f"return '{text}';")), None).outcome
    assert first == Completed(result=text)
    again = isolated(request(producer("return state;"), state=text), None).outcome
    assert again == Completed(result=text)
    over = isolated(request(producer(f"return '{text}' + 'x';")), None).outcome
    assert isinstance(over, LimitFailure)
    assert over.limit is Limit.STATE_SIZE


# 5. Host memory before the size check


def test_a_value_over_the_limit_is_refused_before_the_host_builds_it() -> None:
    items = 300_000
    source = producer(
        f"const a = [];\nfor (let i = 0; i < {items}; i++) a.push({{ a: 1 }});\nreturn a;"
    )
    generous = {"cpu_time_s": 20.0, "wall_time_s": 40.0, "memory_bytes": 64 * 1024 * 1024}
    policy = HostPolicy(sandbox=FAST_LIMITS.model_copy(update=generous))
    text_bytes = len(json.dumps([{"a": 1}] * items, separators=(",", ":")))
    tracemalloc.start()
    try:
        outcome = run_phase(request(source, policy=policy), None).outcome
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(outcome, LimitFailure), outcome
    assert outcome.limit is Limit.STATE_SIZE
    assert peak < 6 * text_bytes, (peak, text_bytes)


def test_too_many_publishes_is_a_limit_naming_it(isolated: Isolated) -> None:
    policy = HostPolicy(sandbox=FAST_LIMITS.model_copy(update={"max_publishes": 3}))
    host = TopicHost()
    source = producer(
        "for (let i = 0; i < 5; i++) await ctx.publish('row.created', { title: 't' + i });"
    )
    outcome = isolated(request(source, policy=policy), host).outcome
    assert isinstance(outcome, LimitFailure)
    assert outcome.limit is Limit.PUBLISHES
    assert "max_publishes" in outcome.message
    assert len(host.events) == 3


def test_too_many_published_bytes_is_a_limit_naming_it(isolated: Isolated) -> None:
    limits = FAST_LIMITS.model_copy(update={"max_published_bytes": 100_000})
    host = TopicHost()
    source = producer(
        "for (let i = 0; i < 5; i++)\n"
        "  await ctx.publish('row.created', { title: 't', payload: 'x'.repeat(30000) });"
    )
    outcome = isolated(request(source, policy=HostPolicy(sandbox=limits)), host).outcome
    assert isinstance(outcome, LimitFailure)
    assert outcome.limit is Limit.PUBLISHED_BYTES
    assert outcome.line == 4
    assert len(host.events) == 3


def test_the_trace_keeps_values_only_within_its_budget(isolated: Isolated) -> None:
    limits = FAST_LIMITS.model_copy(update={"max_trace_bytes": 10_000})
    host = TopicHost(read_result="r" * 3_000)
    source = producer("for (let i = 0; i < 6; i++) await ctx.gmail.search({});\nreturn 1;")
    result = isolated(request(source, policy=HostPolicy(sandbox=limits)), host)
    assert result.outcome == Completed(result=1)
    if result.isolation == "in_process":
        kept = [call.result for call in result.trace.calls]
        assert kept[:3] == ["r" * 3_000] * 3
        assert kept[3:] == [None] * 3
        assert result.trace.truncated


# 7. Messages a repairing LLM can act on


def test_a_function_named_like_a_stack_frame_does_not_move_the_line(isolated: Isolated) -> None:
    source = producer(
        "const f = function () { throw new Error('x'); };\n"
        "Object.defineProperty(f, 'name', { value: 'g (<input>:99:1)' });\n"
        "f();"
    )
    outcome = isolated(request(source), None).outcome
    assert isinstance(outcome, LogicFailure)
    assert outcome.line == 3


@pytest.mark.parametrize(
    "name",
    [
        "x\\n    at evil (workflow.js:1:1)",
        "x (<input>:1:1)\\n    at evil",
        "x (<input>:1:1)\\r\\n    at evil",
        "x (<input>:1:1)\\u2028    at evil",
    ],
)
def test_a_function_name_with_a_line_break_cannot_print_a_frame(
    isolated: Isolated, name: str
) -> None:
    source = producer(
        f'const name = "{name}";\n'
        "const f = { [name]: () => { throw new Error('boom'); } }[name];\n"
        "f();"
    )
    outcome = isolated(request(source), None).outcome
    assert isinstance(outcome, LogicFailure), outcome
    assert (outcome.line, outcome.column) == (4, 39)


def test_the_script_still_reads_its_own_stack_with_names(isolated: Isolated) -> None:
    source = producer(
        "function inner() { return new Error('x').stack; }\n"
        "const g = { ['a\\nb']: () => inner() }['a\\nb'];\nreturn g();"
    )
    outcome = isolated(request(source), None).outcome
    assert isinstance(outcome, Completed), outcome
    assert isinstance(outcome.result, str)
    lines = outcome.result.splitlines()
    assert lines[0].startswith("    at inner (<input>:3:")
    assert lines[1].startswith("    at a\\nb (<input>:4:")


@pytest.mark.parametrize(
    ("declaration", "line"),
    [
        ("const Keep = { workflow: (d) => d, consumer: (d) => d };", 1),
        ("function Keep() {}\nKeep.workflow = (d) => d;", 1),
        ("const x = 1;\nlet { a, b: [Keep] } = { a: 1, b: [{ workflow: (d) => d }] };", 2),
        ("class Keep { static workflow(d) { return d; } }", 1),
    ],
)
def test_a_module_that_shadows_keep_is_told_so_at_the_declaration(
    isolated: Isolated, declaration: str, line: int
) -> None:
    source = declaration + "\n" + producer("return 1;")
    outcome = isolated(request(source), None).outcome
    assert isinstance(outcome, LogicFailure), outcome
    assert f"declares its own `Keep` at line {line}" in outcome.message
    assert outcome.line == line


def test_a_script_without_a_workflow_and_no_keep_of_its_own_is_told_to_export_one(
    isolated: Isolated,
) -> None:
    source = "const Keeper = 1;\n// const Keep = 2;\nexport default { producers: {} };"
    outcome = isolated(request(source), None).outcome
    assert isinstance(outcome, LogicFailure), outcome
    assert "never called Keep.workflow(...)" in outcome.message
    assert "declares its own" not in outcome.message


@pytest.mark.parametrize(
    ("body", "limit", "absent"),
    [
        ("const a = [];\nfor (;;) a.push([a.length, {}]);", Limit.MEMORY, ("nest", "wall")),
        ("let s = 'ab';\nfor (;;) s = s + s;", Limit.MEMORY, ("nest", "wall")),
        ("for (;;) {}", Limit.CPU_TIME, ("memory", "nest", "wall-clock")),
        ("function r(n) { return r(n + 1) + 1; }\nreturn r(0);", Limit.STACK, ("memory", "nest")),
    ],
)
def test_memory_time_and_stack_are_told_apart(
    isolated: Isolated, body: str, limit: Limit, absent: tuple[str, ...]
) -> None:
    generous = {"cpu_time_s": 20.0, "wall_time_s": 40.0}
    if limit is not Limit.CPU_TIME:
        policy = HostPolicy(sandbox=FAST_LIMITS.model_copy(update=generous))
    else:
        policy = HostPolicy(sandbox=FAST_LIMITS)
    outcome = isolated(request(producer(body), policy=policy), None).outcome
    assert isinstance(outcome, LimitFailure), outcome
    assert outcome.limit is limit
    assert not any(word in outcome.message for word in absent), outcome.message


def test_out_of_memory_in_a_regexp_is_the_memory_limit(isolated: Isolated) -> None:
    source = producer("const s = 'a'.repeat(2e6);\nreturn /(a|b)*c/.exec(s);")
    outcome = isolated(request(source), None).outcome
    assert isinstance(outcome, LimitFailure)
    assert outcome.limit is Limit.MEMORY
    assert "out of memory" in outcome.message
    assert "logic" not in outcome.message


def test_a_huge_error_is_capped(isolated: Isolated) -> None:
    source = consumer(mutate="await ctx.gmail.send({ to: 'x', subject: ['y'.repeat(900000)] });")
    policy = HostPolicy(sandbox=FAST_LIMITS.model_copy(update={"max_value_bytes": 2**20}))
    result = isolated(request(source, "mutate", policy=policy), None)
    assert isinstance(result.outcome, LogicFailure)
    assert len(result.outcome.message) <= MESSAGE_LIMIT
    assert "subject" in result.outcome.message
    for call in result.trace.calls:
        assert call.error is None or len(call.error) <= MESSAGE_LIMIT


def test_a_big_number_is_not_reported_as_nesting(isolated: Isolated) -> None:
    outcome = isolated(request(producer("return { n: 2 ** 60 };")), None).outcome
    assert isinstance(outcome, LogicFailure)
    assert "`state.n` is the integer 1152921504606847000" in outcome.message
    assert "nest" not in outcome.message
    assert (outcome.line, outcome.column) == (3, 1)


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("if (state) {\n  return { fine: 1 };\n}\nconst n = 2 ** 60;\n    return { n };", (7, 5)),
        ("const é = 'é';\nif (é) return { n: 2 ** 60, é };\nreturn 1;", (4, 9)),
        ("const f = () => { return { n: 2 ** 60 }; };\nconst v = f();\nreturn v;", (5, 1)),
        ("const n = 2 ** 60;\nreturn (\n  { n }\n);", (4, 1)),
    ],
    ids=["second-return", "non-ascii", "helper", "multi-line"],
)
def test_a_bad_returned_value_is_located_at_its_return(
    isolated: Isolated, body: str, where: tuple[int, int]
) -> None:
    outcome = isolated(request(producer(body)), None).outcome
    assert isinstance(outcome, LogicFailure), outcome
    assert "`state.n` is the integer" in outcome.message
    assert (outcome.line, outcome.column) == where


def test_a_concise_arrow_handler_is_located_at_its_body(isolated: Isolated) -> None:
    source = (
        "export default Keep.workflow({\n"
        "  producers: { h: { handler: async (ctx) =>\n"
        "    ({ n: 2 ** 60 }) } },\n"
        "});\n"
    )
    outcome = isolated(request(source), None).outcome
    assert isinstance(outcome, LogicFailure), outcome
    assert (outcome.line, outcome.column) == (3, 5)


def test_marking_returns_moves_no_reported_column(isolated: Isolated) -> None:
    body = "const n = 1; return { n: n + missing.x };"
    outcome = isolated(request(producer(body)), None).outcome
    assert isinstance(outcome, LogicFailure), outcome
    assert outcome.line == 3
    assert outcome.column == body.index("missing") + 1


def test_returned_values_pass_through_the_marker_unchanged(isolated: Isolated) -> None:
    body = (
        "const same = {};\nconst f = () => same;\n"
        "const g = function () { return 1, 2; };\n"
        "return [f() === same, g(), (() => ({ a: [1] }))()];"
    )
    outcome = isolated(request(producer(body)), None).outcome
    assert outcome == Completed(result=[True, 2, {"a": [1]}])


def test_wall_time_names_where_the_time_went(isolated: Isolated) -> None:
    class SlowHost(TopicHost):
        def call(self, name: str, arguments: JsonValue) -> JsonValue:
            time.sleep(0.7)
            return None

    source = producer("await ctx.gmail.search({});\nawait ctx.gmail.search({});\nreturn 1;")
    outcome = isolated(request(source), SlowHost()).outcome
    assert isinstance(outcome, LimitFailure)
    assert outcome.limit is Limit.WALL_TIME
    assert "ctx calls" in outcome.message
    assert "wall-clock limit of 1.0 s" in outcome.message


def test_a_mutation_with_strict_json_arguments_is_requested(isolated: Isolated) -> None:
    source = consumer(mutate="await ctx.gmail.send({ to: 'ada@example.com\\u{1F600}' });")
    outcome = isolated(request(source, "mutate"), None).outcome
    assert isinstance(outcome, MutationRequested)
    assert outcome.arguments == {"to": "ada@example.com\U0001f600"}


def test_limits_model_has_the_totals() -> None:
    limits = SandboxLimits()
    assert limits.max_publishes > 0
    assert limits.max_published_bytes >= limits.max_value_bytes
    assert limits.max_trace_bytes > 0


def test_arguments_far_over_the_limit_are_refused_in_the_stub_at_the_call(
    isolated: Isolated,
) -> None:
    host = TopicHost()
    source = producer("const big = 'x'.repeat(200000);\nawait ctx.gmail.search({ big });")
    outcome = isolated(request(source), host).outcome
    assert isinstance(outcome, LimitFailure)
    assert outcome.limit is Limit.VALUE_SIZE
    assert outcome.line == 4
    assert host.calls == []


def test_a_large_result_within_the_limits_completes_in_both_isolations(
    isolated: Isolated,
) -> None:
    limits = SandboxLimits(
        cpu_time_s=10.0,
        wall_time_s=20.0,
        memory_bytes=256 * 1024 * 1024,
        max_value_bytes=8 * 1024 * 1024,
    )
    source = consumer(
        prepare="const rows = [];\n"
        "for (let i = 0; i < 60000; i++) rows.push({ id: 'row-' + i, text: '日本語 😀 ' + i });\n"
        "return { reservations: [], data: rows };"
    )
    result = isolated(request(source, "prepare", policy=HostPolicy(sandbox=limits)), None)
    assert isinstance(result.outcome, Completed), result.outcome
    assert isinstance(result.outcome.result, dict)
    assert len(result.outcome.result["data"]) == 60_000
    assert result.trace.boundary_time_s > 0


def test_cpu_time_is_told_apart_from_wall_time(isolated: Isolated) -> None:
    outcome = isolated(request(producer("for (;;) {}")), None).outcome
    assert isinstance(outcome, LimitFailure)
    assert outcome.limit is Limit.CPU_TIME
    assert "s of CPU in this phase" in outcome.message


def test_a_script_with_a_syntax_error_is_compiled_as_written(isolated: Isolated) -> None:
    source = producer("return { a: 1 ;")
    outcome = isolated(request(source), None).outcome
    assert isinstance(outcome, LogicFailure), outcome
    assert "__keepReturn" not in outcome.message
