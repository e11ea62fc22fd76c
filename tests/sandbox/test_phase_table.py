"""The phase table of DESIGN.md, row by row, enforced at run time."""

from __future__ import annotations

import pytest

from keep_sdk.model import HandlerPhase, HostPolicy
from keep_sdk.sandbox import (
    Capabilities,
    Completed,
    LogicFailure,
    MutationRequested,
    run_phase,
)
from keep_sdk.sandbox.engine import PhaseRun
from tests.sandbox.helpers import MANIFEST, RecordingHost, in_phase, request

CALLS = {
    "gmail.search": 'ctx.gmail.search({q: "x"})',
    "gmail.getById": 'ctx.gmail.getById({id: "1"})',
    "gmail.send": 'ctx.gmail.send({to: "a@example.com"})',
    "peek": 'ctx.peek("email.received", {limit: 5})',
    "getByIds": 'ctx.getByIds("email.received", ["m1"])',
    "publish": 'ctx.publish("row.created", {messageId: "m1", title: "Row for a@example.com"})',
}

ALLOWED = {
    "gmail.search": {"producer", "prepare"},
    "gmail.getById": {"producer", "prepare"},
    "gmail.send": {"mutate"},
    "peek": {"prepare"},
    "getByIds": {"prepare"},
    "publish": {"producer", "next"},
}

PHASES = [p.value for p in HandlerPhase]
ROWS = [(name, phase) for name in CALLS for phase in PHASES]


def _probe(name: str) -> str:
    if "." in name:
        connector, op = name.split(".")
        return f"typeof (ctx.{connector} && ctx.{connector}.{op})"
    return f"typeof ctx.{name}"


@pytest.mark.parametrize(("name", "phase"), ROWS)
def test_ctx_contains_exactly_what_the_phase_allows(name: str, phase: str) -> None:
    result = run_phase(request(in_phase(phase, f"return {_probe(name)};"), phase), RecordingHost())
    expected = "function" if phase in ALLOWED[name] else "undefined"
    assert result.outcome == Completed(result=expected)


@pytest.mark.parametrize(("name", "phase"), ROWS)
def test_host_refuses_what_the_phase_forbids_even_when_reached(name: str, phase: str) -> None:
    req = request(in_phase(phase, f"return await {CALLS[name]};"), phase)
    exposed = Capabilities.everything(MANIFEST, HandlerPhase(phase), req.policy)
    host = RecordingHost()
    result = PhaseRun(req, host, exposed=exposed).run()
    if phase not in ALLOWED[name]:
        assert isinstance(result.outcome, LogicFailure)
        assert "not allowed in " + phase in result.outcome.message
        assert result.outcome.error_name == "PhaseViolation"
        assert result.outcome.line is not None
        assert host.calls == []
        assert result.trace.calls[-1].status == "refused"
    elif name == "gmail.send":
        assert isinstance(result.outcome, MutationRequested)
        assert host.calls == []
    else:
        assert isinstance(result.outcome, Completed)
        assert [call[0] for call in host.calls] == [name]


@pytest.mark.parametrize(
    ("policy_reads", "expected"), [("none", "undefined"), ("by_id", "function")]
)
def test_mutate_reads_by_id_follows_the_policy(policy_reads: str, expected: str) -> None:
    policy = HostPolicy.model_validate(
        {"sandbox": request("").policy.sandbox, "mutate_reads": policy_reads}
    )
    source = in_phase("mutate", "return [typeof ctx.gmail.getById, typeof ctx.gmail.search];")
    result = run_phase(request(source, "mutate", policy=policy), RecordingHost())
    assert result.outcome == Completed(result=[expected, "undefined"])


def test_by_id_read_in_mutate_reaches_the_host_only_with_the_policy() -> None:
    policy = request("").policy.model_copy(update={"mutate_reads": "by_id"})
    host = RecordingHost()
    source = in_phase("mutate", 'const m = await ctx.gmail.getById({id: "7"}); return m.called;')
    result = run_phase(request(source, "mutate", policy=policy), host)
    assert result.outcome == Completed(result="gmail.getById")


DYNAMIC_ATTEMPTS = {
    "computed names": 'return ctx["gm" + "ail"]["se" + "nd"]({to: "a"});',
    "destructured alias": 'const {gmail} = ctx; const s = gmail.send; return s({to: "a"});',
    "Reflect.get": 'return Reflect.get(ctx.gmail, "send")({to: "a"});',
    "own property scan": "return Object.getOwnPropertyNames(ctx.gmail).join();",
    "prototype walk": 'return Object.getPrototypeOf(ctx.gmail).send({to: "a"});',
    "adding the operation": 'ctx.gmail.send = () => 1; return ctx.gmail.send({to: "a"});',
    "defineProperty": 'Object.defineProperty(ctx.gmail, "send", {value: 1}); return 1;',
    "Function constructor": 'return Function("ctx", "return ctx.gmail.send")(ctx)({to: "a"});',
    "eval": 'return eval("ctx.gmail.send")({to: "a"});',
    "constructor of a function": (
        'return (() => {}).constructor("return this")().gmail.send({to: "a"});'
    ),
    "globalThis lookup": 'return globalThis.ctx.gmail.send({to: "a"});',
}


@pytest.mark.parametrize("attempt", sorted(DYNAMIC_ATTEMPTS))
def test_dynamic_access_cannot_reach_a_forbidden_operation(attempt: str) -> None:
    host = RecordingHost()
    result = run_phase(request(in_phase("prepare", DYNAMIC_ATTEMPTS[attempt]), "prepare"), host)
    assert host.calls == []
    assert not isinstance(result.outcome, MutationRequested)
    if isinstance(result.outcome, Completed):
        assert result.outcome.result in ("getById,search", 1)
    else:
        assert isinstance(result.outcome, LogicFailure)
