"""The frame that ends a phase in a worker: what the worker sends is what the parent
returns, and a frame that is not a phase result is a protocol break, never an exception
out of `ProcessIsolation.run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from keep_sdk.sandbox import (
    Completed,
    InternalFailure,
    LogicFailure,
    ProcessIsolation,
    run_phase,
)
from keep_sdk.sandbox.frames import DONE_HEAD, model_message
from keep_sdk.sandbox.outcome import ConsoleLine, PhaseResult, Trace
from keep_sdk.sandbox.process import parse_message
from keep_sdk.sandbox.worker import done_frame
from tests.sandbox.helpers import RecordingHost, producer, request

TEXT = st.text(st.characters(codec=None, exclude_categories=()))
"""Any text, lone surrogates included (they cannot be written as UTF-8)."""

KEYS = st.text(st.characters(exclude_categories=("Cs",)))
"""Object keys: the boundary codec refuses a key with a lone surrogate before any result
holds one (and pydantic's JSON dump would replace it)."""

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)

RESULTS = st.builds(
    PhaseResult,
    outcome=st.builds(Completed, result=JSON, returned=st.booleans())
    | st.builds(LogicFailure, message=TEXT, line=st.none() | st.integers(1, 10**6)),
    trace=st.builds(
        Trace,
        console=st.lists(
            st.builds(ConsoleLine, level=st.sampled_from(["log", "warn"]), text=TEXT),
            max_size=3,
        ),
        jobs=st.integers(0, 10**4),
        wall_time_s=st.floats(0, 60),
    ),
    isolation=st.just("process"),
)


@given(RESULTS)
def test_the_parent_reads_back_the_result_the_worker_sent(result: PhaseResult) -> None:
    assert parse_message(done_frame(result)) == result


@given(TEXT, RESULTS)
def test_a_message_holds_its_envelope_and_its_model_whatever_their_text(
    key: str, result: PhaseResult
) -> None:
    message = model_message({"type": "run", "context": key}, "request", result)
    expected = {"type": "run", "context": key, "request": result.model_dump(mode="json")}
    assert json.loads(message) == expected
    assert message.startswith(b'{"type":"run"') or message.isascii()


def test_a_result_that_is_valid_utf_8_is_sent_in_the_one_pass_form() -> None:
    frame = done_frame(PhaseResult(outcome=Completed(result={"ü": [1, 2.5, None]})))
    assert frame.startswith(DONE_HEAD)
    assert json.loads(frame)["type"] == "done"


def test_a_result_with_a_lone_surrogate_is_sent_as_ascii_json() -> None:
    result = PhaseResult(outcome=Completed(result=["half \ud800 a pair"]))
    frame = done_frame(result)
    assert not frame.startswith(DONE_HEAD)
    assert frame.isascii()
    assert parse_message(frame) == result


BROKEN = {
    "no JSON after the head": (DONE_HEAD + b"{nope}", "validation error for PhaseResult"),
    "not a result": (
        DONE_HEAD + b'{"outcome": {"kind": "nonsense"}}}',
        "validation error for PhaseResult",
    ),
    "something after the result": (
        DONE_HEAD + b'{"outcome": {"kind": "completed"}}, "x": 1}',
        "validation error for PhaseResult",
    ),
    "no JSON": (b"{nope", "Expecting property name"),
    "a list": (b"[1, 2]", "a worker message is a JSON object"),
    "a done message without a result": (b'{"type": "done"}', "validation error for PhaseResult"),
    "a done message with another result": (
        b'{"type": "done", "result": {"outcome": 1}}',
        "validation error for PhaseResult",
    ),
}


@pytest.mark.parametrize(("frame", "why"), BROKEN.values(), ids=BROKEN.keys())
def test_a_frame_that_is_not_a_message_is_refused(frame: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_message(frame)


def test_a_call_message_is_passed_on() -> None:
    frame = b'{"type": "call", "name": "gmail.search", "arguments": [{}]}'
    assert parse_message(frame) == json.loads(frame)


def test_a_worker_that_sends_a_broken_result_is_a_protocol_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose done frame is no phase result (here every worker of the pool, through
    a `sitecustomize`) ends the phase as an internal failure instead of raising."""
    (tmp_path / "sitecustomize.py").write_text(
        "from keep_sdk.sandbox.outcome import PhaseResult\n"
        'PhaseResult.model_dump_json = lambda self, **kw: \'{"outcome": {"kind": "x"}}\'\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with ProcessIsolation() as isolation:
        result = isolation.run(request(producer("return 1;")), RecordingHost())
    assert result.outcome == InternalFailure(message="the sandbox worker broke the protocol")


@pytest.mark.parametrize(
    "state",
    [{"n": 1, "text": "ü ✓"}, {"half": "\ud800"}],
    ids=["utf-8", "a lone surrogate"],
)
def test_a_worker_gets_the_request_the_parent_was_given(state: JsonValue) -> None:
    """A request is sent as its own JSON, or as ASCII JSON when it cannot be written as
    UTF-8: the worker's phase ends as the same phase in this process does."""
    source = producer("return state;")
    with ProcessIsolation() as isolation:
        pooled = isolation.run(request(source, state=state), RecordingHost())
    here = run_phase(request(source, state=state), RecordingHost())
    assert pooled.outcome == here.outcome
    assert pooled.outcome.kind == ("completed" if state.get("n") else "logic_error")
