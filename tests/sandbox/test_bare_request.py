"""A phase request without call sites approves no ctx call (issue 28): the sandbox fails
closed at the first one, in both isolations, unless a test of the sandbox alone opts out
with `unchecked_sites`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from keep_sdk.model import HandlerPhase
from keep_sdk.sandbox import (
    Completed,
    InProcessIsolation,
    LogicFailure,
    MutationRequested,
    PhaseRequest,
    ProcessIsolation,
)
from keep_sdk.validator import validate
from tests.sandbox.helpers import FAST_POLICY, MANIFEST, RecordingHost, consumer, producer

READ = (
    "export default Keep.workflow({\n"
    "  topics: { t: {} },\n"
    "  producers: { h: { schedule: { interval: '5m' }, handler: async (ctx, state) => {\n"
    "    const found = await ctx.gmail.search({});\n"
    "    return { found };\n"
    "  } } },\n"
    "});\n"
)
MUTATE = consumer(mutate="await ctx.sheets.appendRow({ values: ['x'] });")
QUIET = producer("return { n: 1 };")


@pytest.fixture(scope="module", params=["in_process", "process"])
def isolation(request: pytest.FixtureRequest) -> Iterator[InProcessIsolation | ProcessIsolation]:
    if request.param == "in_process":
        yield InProcessIsolation()
    else:
        with ProcessIsolation() as pool:
            yield pool


def bare(source: str, phase: HandlerPhase, **fields: object) -> PhaseRequest:
    return PhaseRequest(
        source=source,
        handler="h" if phase is HandlerPhase.PRODUCER else "c",
        phase=phase,
        manifest=MANIFEST,
        policy=FAST_POLICY,
        prepared={},
        **fields,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("source", "phase", "name"),
    [
        (READ, HandlerPhase.PRODUCER, "gmail.search"),
        (MUTATE, HandlerPhase.MUTATE, "sheets.appendRow"),
    ],
)
def test_a_request_without_sites_refuses_every_ctx_call(
    source: str,
    phase: HandlerPhase,
    name: str,
    isolation: InProcessIsolation | ProcessIsolation,
) -> None:
    host = RecordingHost()
    result = isolation.run(bare(source, phase), host)
    assert isinstance(result.outcome, LogicFailure), result.outcome
    assert f"ctx.{name} was called" in result.outcome.message
    assert "without the call sites the validator approved" in result.outcome.message
    assert host.calls == []
    assert [c.status for c in result.trace.calls] == ["refused"]


def test_a_request_without_sites_still_runs_a_handler_that_calls_nothing(
    isolation: InProcessIsolation | ProcessIsolation,
) -> None:
    result = isolation.run(bare(QUIET, HandlerPhase.PRODUCER), RecordingHost())
    assert result.outcome == Completed(result={"n": 1}, returned=True)


def test_the_validators_sites_or_the_opt_out_let_the_same_calls_through(
    isolation: InProcessIsolation | ProcessIsolation,
) -> None:
    report = validate(READ, connectors=MANIFEST)
    assert report.ok, report.errors
    workflow = report.workflow
    assert workflow is not None
    sites = workflow.call_sites("h", HandlerPhase.PRODUCER)
    for fields in ({"call_sites": sites}, {"unchecked_sites": True}):
        host = RecordingHost()
        result = isolation.run(bare(READ, HandlerPhase.PRODUCER, **fields), host)
        assert isinstance(result.outcome, Completed), (fields, result.outcome)
        assert [name for name, _ in host.calls] == ["gmail.search"]
    result = isolation.run(bare(MUTATE, HandlerPhase.MUTATE, unchecked_sites=True), RecordingHost())
    assert isinstance(result.outcome, MutationRequested), result.outcome
