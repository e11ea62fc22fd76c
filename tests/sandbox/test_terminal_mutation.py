"""A mutation call is terminal: exactly one mutation is requested, or none, whatever follows."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.sandbox import MutationRequested, run_phase
from tests.sandbox.helpers import FAST_LIMITS, FAST_POLICY, RecordingHost, in_phase, request

SHORT = FAST_POLICY.model_copy(
    update={"sandbox": FAST_LIMITS.model_copy(update={"cpu_time_s": 0.05, "wall_time_s": 0.5})}
)

STATEMENTS = [
    "ctx.gmail.send({to: 'a@example.com'});",
    "await ctx.gmail.send({to: 'b@example.com'});",
    "ctx.sheets.appendRow({values: [1]});",
    "try { await ctx.sheets.appendRow({values: [2]}); } catch (e) {}",
    "try { ctx.gmail.send({to: 'c@example.com'}); } catch (e) {}",
    "await null;",
    "queueMicrotask(() => { try { ctx.gmail.send({to: 'q@example.com'}); } catch (e) {} });",
    "Promise.resolve().then(() => ctx.slack.postMessage({text: 'p'}));",
    "throw new Error('boom');",
    "return 'early';",
    "for (;;) {}",
    "try { for (;;) {} } catch (e) {}",
    "console.log('still here');",
    "const arr = []; for (;;) arr.push([arr.length]);",
    "await new Promise((r) => r());",
]

MUTATIONS = {"gmail.send", "sheets.appendRow", "slack.postMessage"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=5))
def test_at_most_one_mutation_whatever_the_script_does(statements: list[str]) -> None:
    host = RecordingHost()
    started = time.monotonic()
    result = run_phase(
        request(in_phase("mutate", "\n".join(statements)), "mutate", policy=SHORT), host
    )
    assert time.monotonic() - started < SHORT.sandbox.wall_time_s + 1.0
    assert not any(name in MUTATIONS for name, _ in host.calls)
    requested = [c for c in result.trace.calls if c.status == "requested"]
    if isinstance(result.outcome, MutationRequested):
        assert len(requested) == 1
        assert requested[0].name == f"{result.outcome.connector}.{result.outcome.operation}"
        assert requested[0].arguments == result.outcome.arguments
    else:
        assert requested == []


def test_the_first_mutation_wins_and_later_calls_are_reported() -> None:
    body = (
        "ctx.gmail.send({to: 'first@example.com'});\n"
        "try { await ctx.slack.postMessage({text: 'x'}); } catch (e) {}\n"
        "return 1;"
    )
    result = run_phase(request(in_phase("mutate", body), "mutate"), RecordingHost())
    assert isinstance(result.outcome, MutationRequested)
    assert result.outcome.arguments == {"to": "first@example.com"}
    statuses = [(c.name, c.status) for c in result.trace.calls]
    assert statuses == [("slack.postMessage", "dropped"), ("gmail.send", "requested")]


def test_a_mutation_that_the_script_awaits_ends_the_phase() -> None:
    body = "await ctx.gmail.send({to: 'a@example.com'});\nconsole.log('never');"
    result = run_phase(request(in_phase("mutate", body), "mutate"), RecordingHost())
    assert isinstance(result.outcome, MutationRequested)
    assert result.trace.console == []


def test_a_failure_after_the_mutation_call_fails_closed() -> None:
    body = "ctx.gmail.send({to: 'a@example.com'});\nawait null;\nnull.x;"
    result = run_phase(request(in_phase("mutate", body), "mutate"), RecordingHost())
    assert result.outcome.kind == "logic_error"
    assert [(c.name, c.status) for c in result.trace.calls] == [("gmail.send", "dropped")]


def test_mutate_without_a_mutation_completes() -> None:
    body = "if (prepared.skip) return;\nawait ctx.gmail.send({to: 'a@example.com'});"
    result = run_phase(
        request(in_phase("mutate", body), "mutate", prepared={"skip": True}), RecordingHost()
    )
    assert result.outcome.kind == "completed"
