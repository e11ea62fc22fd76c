"""`max_log_bytes` is a per-run total of console output, in UTF-8 bytes, and a limit error."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.model import HostPolicy
from keep_sdk.sandbox import Completed, Limit, LimitFailure, ProcessIsolation
from tests.sandbox.boundary_helpers import Isolated
from tests.sandbox.helpers import FAST_LIMITS, RecordingHost, producer, request, run

LIMIT = 1_000


def _policy(limit: int = LIMIT) -> HostPolicy:
    return HostPolicy(sandbox=FAST_LIMITS.model_copy(update={"max_log_bytes": limit}))


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessIsolation]:
    with ProcessIsolation(prestart=1) as isolation:
        yield isolation


@pytest.fixture(params=["in_process", "process"])
def isolated(request: pytest.FixtureRequest, pool: ProcessIsolation) -> Isolated:
    return Isolated(pool if request.param == "process" else None)


def test_logging_over_the_limit_is_a_limit_error_at_the_console_call(isolated: Isolated) -> None:
    source = producer("console.log('a'.repeat(600));\nconsole.log('b'.repeat(600));\nreturn 1;")
    result = isolated(request(source, policy=_policy()), RecordingHost())
    outcome = result.outcome
    assert isinstance(outcome, LimitFailure), outcome
    assert outcome.limit is Limit.LOG_BYTES
    assert "max_log_bytes" in outcome.message
    assert f"{LIMIT} bytes" in outcome.message
    assert outcome.line == 4
    assert [line.text for line in result.trace.console] == ["a" * 600]
    assert result.trace.log_bytes == 600


def test_catching_the_limit_error_does_not_resume_logging(isolated: Isolated) -> None:
    source = producer(
        "for (let i = 0; i < 10; i++) { try { console.log('x'.repeat(400)); } catch (e) {} }\n"
        "return 1;"
    )
    outcome = isolated(request(source, policy=_policy()), RecordingHost()).outcome
    assert isinstance(outcome, LimitFailure)
    assert outcome.limit is Limit.LOG_BYTES


def test_bytes_logged_by_earlier_phases_of_the_run_count() -> None:
    source = producer("console.log('x'.repeat(300));\nreturn 1;")
    fits = run(source, policy=_policy(), log_bytes_before=700)
    assert fits.outcome == Completed(result=1)
    assert fits.trace.log_bytes == 300
    over = run(source, policy=_policy(), log_bytes_before=701).outcome
    assert isinstance(over, LimitFailure)
    assert over.limit is Limit.LOG_BYTES
    assert "earlier phases of this run logged 701" in over.message


@settings(max_examples=25, deadline=None)
@given(
    text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=60),
    repeat=st.integers(1, 40),
)
def test_the_unit_is_utf8_bytes_in_the_script_and_the_host(text: str, repeat: int) -> None:
    line = text * repeat
    shown = line.replace("\x00", "\ufffd")
    size = len(shown.encode("utf-8"))
    source = producer(f"console.log({json.dumps(line)});\nreturn 1;")
    at_limit = run(source, policy=_policy(size))
    if len(line) <= 8192:
        assert at_limit.outcome == Completed(result=1)
        assert at_limit.trace.log_bytes == size
        assert at_limit.trace.console[0].text == shown
    if size > 1:
        below = run(source, policy=_policy(size - 1)).outcome
        assert isinstance(below, LimitFailure)
        assert below.limit is Limit.LOG_BYTES
