"""The async bridge: ctx calls, results, console, errors and their script locations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from keep_sdk.errors import (
    InvalidArguments,
    LogicError,
    PermissionDenied,
    PreconditionFailed,
    TransientError,
    UncertainOutcome,
)
from keep_sdk.model import FailureKind
from keep_sdk.sandbox import (
    CallFailed,
    Completed,
    InternalFailure,
    Limit,
    LimitFailure,
    LogicFailure,
    PhaseRequest,
)
from keep_sdk.sandbox.returns import MARKER
from tests.sandbox.helpers import RecordingHost, consumer, in_phase, producer, run


def test_a_ctx_call_returns_the_host_value_and_is_traced() -> None:
    host = RecordingHost(lambda name, args: {"rows": [1, 2, 3], "echo": args})
    source = producer('const r = await ctx.gmail.search({q: "from:alice"});\nreturn r;')
    result = run(source, host=host)
    assert result.outcome == Completed(result={"rows": [1, 2, 3], "echo": {"q": "from:alice"}})
    [call] = result.trace.calls
    assert call.name == "gmail.search"
    assert call.status == "ok"
    assert call.arguments == {"q": "from:alice"}
    assert call.result == {"rows": [1, 2, 3], "echo": {"q": "from:alice"}}
    assert call.duration_s >= 0


def test_a_call_without_argument_passes_an_empty_object(host: RecordingHost) -> None:
    run(producer("await ctx.gmail.search();"), host=host)
    assert host.calls == [("gmail.search", {})]


def test_a_non_object_argument_is_refused(host: RecordingHost) -> None:
    result = run(producer('await ctx.gmail.search("alice");'), host=host)
    assert isinstance(result.outcome, LogicFailure)
    assert "one object argument" in result.outcome.message
    assert host.calls == []


def test_concurrent_calls_settle_independently() -> None:
    host = RecordingHost(lambda name, args: args)
    source = producer(
        "const rs = await Promise.all([1, 2, 3].map((i) => ctx.gmail.search({i})));\n"
        "return rs.map((r) => r.i);"
    )
    assert run(source, host=host).outcome == Completed(result=[1, 2, 3])


def test_unicode_and_large_values_cross_intact() -> None:
    text = "żółw 🐢 " * 500
    host = RecordingHost(lambda name, args: {"text": text})
    source = producer("const r = await ctx.gmail.search({});\nreturn r.text.length;")
    assert run(source, host=host).outcome == Completed(result=len(text.encode("utf-16-le")) // 2)


def test_console_is_captured_with_levels_and_formatting() -> None:
    source = producer(
        'console.log("a", 1, {b: [2]}, null, undefined);\n'
        'console.warn(new TypeError("bad"));\nconsole.error("e");\nconsole.info("i");'
    )
    lines = [(line.level, line.text) for line in run(source).trace.console]
    assert lines == [
        ("log", 'a 1 {"b":[2]} null undefined'),
        ("warn", "TypeError: bad"),
        ("error", "e"),
        ("info", "i"),
    ]


def test_console_output_over_the_limit_ends_the_phase_keeping_what_fit() -> None:
    result = run(
        producer('for (let i = 0; i < 1000; i++) console.log("x".repeat(100));\nreturn 1;')
    )
    assert isinstance(result.outcome, LimitFailure), result.outcome
    assert result.outcome.limit is Limit.LOG_BYTES
    assert len(result.trace.console) == 4 * 1024 // 100
    assert result.trace.log_bytes == sum(len(line.text) for line in result.trace.console)


def test_undefined_result_is_not_returned() -> None:
    result = run(producer("const x = 1;"))
    assert result.outcome == Completed(result=None, returned=False)


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("prepare", [{"s": 1}]),
        ("mutate", [{"data": 2}]),
        ("next", [{"data": 2}, {"status": "none"}]),
    ],
)
def test_each_phase_receives_the_arguments_of_the_spec(phase: str, expected: JsonValue) -> None:
    source = in_phase(phase, "return Array.from(arguments).slice(1);").replace("async ", "", 0)
    source = source.replace(f"async {phase}(", f"{phase}(")
    result = run(
        source,
        phase,
        state={"s": 1},
        prepared={"data": 2},
        mutation_result={"status": "none"},
    )
    assert result.outcome == Completed(result=expected)


def test_consumer_methods_see_their_definition_as_this() -> None:
    source = consumer(prepare="return this.helper(2);").replace(
        "Keep.consumer({", "Keep.consumer({\n    helper(x) { return x * 21; },", 1
    )
    assert run(source, "prepare").outcome == Completed(result=42)


def test_a_bare_function_producer_runs() -> None:
    source = "export default Keep.workflow({ producers: { h: async (ctx, s) => s + 1 } });"
    assert run(source, state=41).outcome == Completed(result=42)


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("export default {};", "never called Keep.workflow"),
        (
            "Keep.workflow({});\nexport default Keep.workflow({});",
            "called more than once",
        ),
        ("export default Keep.workflow({ producers: {} });", 'no producer "h"'),
        ("export default Keep.workflow({ producers: { h: { handler: 1 } } });", "handler"),
    ],
)
def test_a_missing_handler_is_a_logic_error(source: str, text: str) -> None:
    outcome = run(source).outcome
    assert isinstance(outcome, LogicFailure)
    assert text in outcome.message


def test_a_missing_consumer_phase_is_a_logic_error() -> None:
    source = "export default Keep.workflow({ consumers: { c: Keep.consumer({ prepare() {} }) } });"
    outcome = run(source, "next").outcome
    assert isinstance(outcome, LogicFailure)
    assert "has no next function" in outcome.message


def test_thrown_errors_carry_the_script_line() -> None:
    source = producer("const a = 1;\n\n  throw new RangeError('too far');")
    outcome = run(source).outcome
    assert outcome == LogicFailure(
        message="RangeError: too far", error_name="RangeError", line=5, column=13
    )


def test_errors_thrown_by_the_prelude_point_at_the_calling_line() -> None:
    outcome = run(producer("const x = 1;\nreturn Function('1');")).outcome
    assert isinstance(outcome, LogicFailure)
    assert outcome.line == 4


def test_module_level_errors_carry_their_line() -> None:
    source = "const a = 1;\nnull.x;\nexport default Keep.workflow({});"
    outcome = run(source).outcome
    assert isinstance(outcome, LogicFailure)
    assert outcome.line == 2


def test_to_error_builds_a_located_logic_error() -> None:
    result = run(producer("throw new Error('x');"), filename="flow.js")
    request = PhaseRequest(source="", handler="h", phase="producer", filename="flow.js")
    error = result.outcome.to_error(request)
    assert isinstance(error, LogicError)
    assert str(error) == "Error: x (at flow.js:3:11 in h.producer)"


def _raising(exc: Exception) -> RecordingHost:
    def answer(name: str, args: JsonValue) -> JsonValue:
        raise exc

    return RecordingHost(answer)


@pytest.mark.parametrize(
    ("exc", "failure"),
    [
        (TransientError("slow down", retry_after=7.0), FailureKind.TRANSIENT),
        (PermissionDenied("no"), FailureKind.PERMISSION),
        (PreconditionFailed("gone"), FailureKind.PRECONDITION),
        (UncertainOutcome("maybe"), FailureKind.INDETERMINATE),
    ],
)
def test_connector_errors_end_the_phase_uncatchably(exc: Exception, failure: FailureKind) -> None:
    source = producer(
        "try { await ctx.gmail.search({}); } catch (e) { return 'caught'; }\nreturn 'after';"
    )
    outcome = run(source, host=_raising(exc)).outcome
    assert isinstance(outcome, CallFailed)
    assert outcome.failure is failure
    assert outcome.operation == "gmail.search"
    assert outcome.line == 3
    assert type(outcome.to_error()) is type(exc)
    if isinstance(exc, TransientError):
        assert outcome.retry_after == 7.0


def test_a_logic_error_from_the_host_is_a_logic_failure() -> None:
    host = _raising(InvalidArguments("bad query", problems=["q"]))
    outcome = run(producer("await ctx.gmail.search({});"), host=host).outcome
    assert outcome == LogicFailure(
        message="bad query", error_name="InvalidArguments", line=3, column=17
    )


def test_an_unexpected_host_exception_is_internal() -> None:
    outcome = run(producer("await ctx.gmail.search({});"), host=_raising(KeyError("k"))).outcome
    assert isinstance(outcome, InternalFailure)
    assert "KeyError" in outcome.message


def test_a_host_result_that_is_not_json_is_internal() -> None:
    host = RecordingHost(lambda name, args: {"s": {1, 2}})  # type: ignore[arg-type,return-value]
    outcome = run(producer("await ctx.gmail.search({});"), host=host).outcome
    assert isinstance(outcome, InternalFailure)
    assert "not JSON" in outcome.message


class TestTopics:
    def test_peek_defaults_and_clamps_its_limit(self, host: RecordingHost) -> None:
        source = in_phase(
            "prepare",
            'await ctx.peek("email.received");\n'
            'await ctx.peek("email.received", {limit: 5});\n'
            'await ctx.peek("email.received", {limit: 1e9});',
        )
        assert run(source, "prepare", host=host).outcome.kind == "completed"
        assert host.calls == [
            ("peek", {"topic": "email.received", "limit": 100}),
            ("peek", {"topic": "email.received", "limit": 5}),
            ("peek", {"topic": "email.received", "limit": 1000}),
        ]

    def test_get_by_ids(self, host: RecordingHost) -> None:
        source = in_phase("prepare", 'return await ctx.getByIds("email.received", ["a", "b"]);')
        run(source, "prepare", host=host)
        assert host.calls == [("getByIds", {"topic": "email.received", "ids": ["a", "b"]})]

    def test_peek_of_an_unsubscribed_topic_is_refused(self, host: RecordingHost) -> None:
        source = in_phase("prepare", 'return await ctx.peek("row.created");')
        outcome = run(source, "prepare", host=host).outcome
        assert isinstance(outcome, LogicFailure)
        assert "may not read topic 'row.created'" in outcome.message
        assert host.calls == []

    def test_publish_is_validated_and_normalised(self, host: RecordingHost) -> None:
        source = producer(
            'await ctx.publish("row.created", {messageId: "m1", title: "Row 1", payload: {a: 1}});'
        )
        run(source, host=host)
        event = {"messageId": "m1", "title": "Row 1", "payload": {"a": 1}}
        assert host.calls == [("publish", {"topic": "row.created", "event": event})]

    def test_publish_without_title_is_refused(self, host: RecordingHost) -> None:
        outcome = run(
            producer('await ctx.publish("row.created", {payload: 1});'), host=host
        ).outcome
        assert isinstance(outcome, LogicFailure)
        assert "`title` is required" in outcome.message
        assert host.calls == []

    def test_publish_to_an_undeclared_topic_is_refused(self, host: RecordingHost) -> None:
        source = producer('await ctx.publish("other", {title: "t"});')
        outcome = run(source, host=host).outcome
        assert isinstance(outcome, LogicFailure)
        assert "may not publish to topic 'other'" in outcome.message


def test_rope_strings_are_flattened_before_they_cross() -> None:
    source = producer(
        "const a = 'x'.repeat(600);\nconst b = 'y'.repeat(600);\n"
        "console.log(a + b);\nconst r = await ctx.gmail.search({q: a + b});\n"
        "return r.with.q + a;"
    )
    result = run(source)
    assert result.outcome == Completed(result="x" * 600 + "y" * 600 + "x" * 600)
    assert result.trace.console[0].text == "x" * 600 + "y" * 600


def test_the_prelude_leaves_only_the_return_marker_on_the_global_object() -> None:
    source = producer(
        "const names = Object.getOwnPropertyNames(globalThis).filter("
        "(n) => n.startsWith('__') || n === 'boot' || n === 'dispatch');\n"
        f"const d = Object.getOwnPropertyDescriptor(globalThis, '{MARKER}');\n"
        "return [names, d.writable, d.configurable, d.enumerable, "
        f"globalThis['{MARKER}'](1, 1, 'same')];"
    )
    assert run(source).outcome == Completed(result=[[MARKER], False, False, False, "same"])


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)
    | st.floats(min_value=-(2.0**53 - 1), max_value=2.0**53 - 1).filter(lambda x: str(x) != "-0.0")
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=80, deadline=None)
@given(JSON_VALUES)
def test_any_json_value_round_trips_through_the_bridge(value: JsonValue) -> None:
    host = RecordingHost(lambda name, args: {"value": value})
    source = producer(
        "const r = await ctx.gmail.search({});\n"
        "const back = await ctx.gmail.search({echo: r.value});\n"
        "return [r.value, JSON.parse(JSON.stringify(r.value))];"
    )
    result = run(source, host=host)
    assert result.outcome == Completed(result=[value, value])
    assert host.calls[1] == ("gmail.search", {"echo": value})


def test_phases_run_concurrently_in_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> JsonValue:
        host = RecordingHost(lambda name, args: args)
        source = producer("const r = await ctx.gmail.search({i: state});\nreturn r.i * 2;")
        outcome = run(source, host=host, state=i).outcome
        assert isinstance(outcome, Completed)
        return outcome.result

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(one, range(40))) == [i * 2 for i in range(40)]


@pytest.mark.parametrize(
    ("source", "text"),
    [("export default 1;\x00", "NUL character"), ("const s = '\ud800';", "lone surrogate")],
)
def test_malformed_source_text_is_a_logic_error(source: str, text: str) -> None:
    outcome = run(source).outcome
    assert isinstance(outcome, LogicFailure)
    assert text in outcome.message


def test_stored_arguments_that_are_not_strict_json_are_refused_with_their_path() -> None:
    outcome = run(producer("return state;"), state={"n": [float("nan")]}).outcome
    assert isinstance(outcome, LogicFailure)
    assert "`state.n[0]` is NaN" in outcome.message
