"""The adversarial suite: every script in adversarial/ ends within its budget plus one
second with the outcome its header names, and the host is alive to run the next one.

Header of each script::

    // attack: what it tries
    // phase: producer | prepare | mutate | next
    // expect: completed[:json] | logic_error[:text] | limit_exceeded:limit|limit
    //         | mutation_requested:json-arguments
    // host-calls: N        (optional: calls the host must have received)
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from keep_sdk.sandbox import Completed, MutationRequested, run_phase
from tests.sandbox.helpers import (
    FAST_LIMITS,
    RecordingHost,
    check_outcome,
    producer,
    request,
    script_headers,
)

SCRIPTS = sorted(Path(__file__).parent.joinpath("adversarial").glob("*.js"))


def test_the_suite_is_large_enough() -> None:
    assert len(SCRIPTS) >= 50
    classes = {script_headers(path)["attack"] for path in SCRIPTS}
    assert len(classes) == len(SCRIPTS)


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_adversarial_script(path: Path) -> None:
    headers = script_headers(path)
    host = RecordingHost()
    started = time.monotonic()
    result = run_phase(request(path.read_text("utf-8"), headers["phase"]), host)
    elapsed = time.monotonic() - started
    assert elapsed < FAST_LIMITS.wall_time_s + 1.0, elapsed
    check_outcome(result, headers["expect"])
    if "host-calls" in headers:
        assert len(host.calls) == int(headers["host-calls"]), host.calls
    requested = [call for call in result.trace.calls if call.status == "requested"]
    assert len(requested) == (1 if isinstance(result.outcome, MutationRequested) else 0)
    assert sum(len(c.text) for c in result.trace.console) <= FAST_LIMITS.max_log_bytes + 8192
    after = run_phase(request(producer("return 6 * 7;")), RecordingHost())
    assert after.outcome == Completed(result=42)
