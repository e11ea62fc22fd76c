"""Sandbox overhead: ``python benchmarks/sandbox.py [--quick]``.

Prints, measured in the same run:
- per-phase overhead of `run_phase` over a bare ``Context()`` + module evaluation of the
  same script (target <= 1 ms in process);
- the host-call round trip of an awaited ``ctx`` call (target <= 30 us);
- the three phases of one consumer run of ``benchmarks/runtime.py`` (prepare peeks one
  event, mutate requests ``sheets.appendRow``, next returns a state) in process, against the
  built-in connectors' manifest and a host that answers the peek (issue 20: <= 2 ms for
  the three; the per-phase overhead target there is <= 250 us);
- the same phase in a pooled worker process and in a fresh worker per run;
- a phase returning a 1 MB and a 10 MB result, in process and in a pooled worker
  (every byte crosses the boundary codec; the worker's result crosses the pipe):
  time must grow linearly, target ratio 10 MB / 1 MB <= 12.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import quickjs
from pydantic import JsonValue

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.contract.manifest import ConnectorManifest, Manifest, OperationManifest
from keep_sdk.model import HandlerPhase, HostPolicy, OperationKind, SandboxLimits
from keep_sdk.sandbox import PhaseRequest, ProcessIsolation, run_phase
from keep_sdk.sandbox.realm import realm_key, realm_policy, realms

sys.path.insert(0, str(Path(__file__).parents[1]))
from benchmarks.runtime import SCRIPT as CONSUMER_SCRIPT

SOURCE = """
export default Keep.workflow({
  producers: { poll: { handler: async (ctx, state) => {
    let n = 0;
    for (let i = 0; i < CALLS; i++) n += (await ctx.gmail.search({ i })).i;
    return { n, seen: (state || {}).seen || 0 };
  } } },
});
"""

MANIFEST = Manifest(
    connectors=[
        ConnectorManifest(
            name="gmail",
            operations=[
                OperationManifest(
                    name="search",
                    kind=OperationKind.READ,
                    permission="gmail.read",
                    arguments={"type": "object"},
                )
            ],
        )
    ]
)


BIG_SOURCE = """
export default Keep.workflow({
  consumers: { big: Keep.consumer({
    async prepare(ctx, state) {
      const items = [];
      for (let i = 0; i < ITEMS; i++) items.push({ id: "item-" + i, title: "日本語 😀 row " + i });
      return { reservations: [], data: items };
    },
    async mutate(ctx, prepared) {},
    async next(ctx, prepared) { return null; },
  }) },
});
"""

BIG_POLICY = HostPolicy(
    sandbox=SandboxLimits(
        cpu_time_s=60.0,
        wall_time_s=120.0,
        memory_bytes=512 * 1024 * 1024,
        max_value_bytes=32 * 1024 * 1024,
        max_jobs=1_000_000,
    )
)
ITEM_BYTES = 54


def _big_request(megabytes: int) -> PhaseRequest:
    items = megabytes * 1024 * 1024 // ITEM_BYTES
    return PhaseRequest(
        source=BIG_SOURCE.replace("ITEMS", str(items)),
        handler="big",
        phase=HandlerPhase.PREPARE,
        policy=BIG_POLICY,
    )


class EchoHost:
    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        return arguments


class PeekHost:
    """Answers the consumer's ``ctx.peek`` with one queued event."""

    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        return [
            {
                "messageId": "j1",
                "topic": "job.queued",
                "title": "t",
                "payload": {"n": 1},
                "createdAt": "2026-11-23T00:00:00Z",
            }
        ]


def _sites(source: str, manifest: Manifest, handler: str, phase: HandlerPhase) -> dict[str, object]:
    """The phase's approved call sites as a request field (nothing on a checkout without
    them, so the same file measures before and after)."""
    try:
        from keep_sdk.validator.engine import analyze
        from keep_sdk.validator.sites import with_call_sites
    except ImportError:
        return {}
    checked = with_call_sites(analyze(source, connectors=manifest))
    assert checked is not None
    return {"call_sites": checked.call_sites(handler, phase)}


def _consumer_requests() -> list[PhaseRequest]:
    """The three phases of one consumer run of benchmarks/runtime.py, as the runtime asks."""
    manifest = ConnectorSet([Gmail(), Sheets(), Slack()]).manifest()
    source = CONSUMER_SCRIPT.replace("NAME", "bench")
    prepared: JsonValue = {
        "reservations": [{"topic": "job.queued", "ids": ["j1"]}],
        "data": {"id": "j1", "n": 1},
        "ui": {"title": "Record job j1"},
    }
    common = {"source": source, "handler": "record", "manifest": manifest}

    def sited(phase: HandlerPhase) -> dict[str, object]:
        return {**common, **_sites(source, manifest, "record", phase)}

    return [
        PhaseRequest(
            phase=HandlerPhase.PREPARE,
            state=None,
            has_state=False,
            subscribed_topics=("job.queued",),
            **sited(HandlerPhase.PREPARE),
        ),
        PhaseRequest(
            phase=HandlerPhase.MUTATE,
            prepared=prepared,
            **sited(HandlerPhase.MUTATE),
        ),
        PhaseRequest(
            phase=HandlerPhase.NEXT,
            prepared=prepared,
            mutation_result={"ok": True},
            **sited(HandlerPhase.NEXT),
        ),
    ]


def _consumer_run(requests: list[PhaseRequest], host: PeekHost) -> None:
    for phase_request in requests:
        outcome = run_phase(phase_request, host).outcome
        if outcome.kind not in ("completed", "mutation_requested"):
            raise SystemExit(f"the consumer phase {phase_request.phase} failed: {outcome}")


def _request(calls: int) -> PhaseRequest:
    source = SOURCE.replace("CALLS", str(calls))
    fields: dict[str, object] = {}
    try:
        from keep_sdk.validator.engine import analyze
        from keep_sdk.validator.sites import call_sites
    except ImportError:
        pass
    else:
        analysis = analyze(source, connectors=MANIFEST)
        fields["call_sites"] = call_sites(analysis, analysis.handlers[0])
    return PhaseRequest(
        source=source,
        handler="poll",
        phase=HandlerPhase.PRODUCER,
        state={"seen": 1},
        manifest=MANIFEST,
        **fields,
    )


def _bare(source: str) -> None:
    context = quickjs.Context()
    context.module(source)
    while context.execute_pending_job():
        pass


def _time_us(action: Callable[[], object], inner: int) -> float:
    started = time.perf_counter()
    for _ in range(inner):
        action()
    return (time.perf_counter() - started) / inner * 1e6


def _rounds(
    actions: dict[str, tuple[Callable[[], object], int]], rounds: int
) -> dict[str, list[float]]:
    """Time every action once per round, interleaved, so that all see the same load."""
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(rounds):
        for name, (action, inner) in actions.items():
            samples[name].append(_time_us(action, inner))
    return samples


def _without_realms(action: Callable[[], object]) -> Callable[[], object]:
    """`action` with every phase in a fresh context (realms off while it runs)."""

    def run() -> object:
        kept = realm_policy.after
        realm_policy.after = None
        try:
            return action()
        finally:
            realm_policy.after = kept

    return run


def _build_realm(request: PhaseRequest, host: EchoHost, number: int) -> None:
    """One phase that builds a realm (the lockdown and compiling the module included), for
    a source of its own, so the realms being measured elsewhere are left alone."""
    unique = request.model_copy(update={"source": f"{request.source}\n// {number}"})
    kept = realm_policy.after
    realm_policy.after = 0
    try:
        run_phase(unique, host)
    finally:
        realm_policy.after = kept
    built = realms.take(realm_key(unique))
    if built is not None:
        built.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    options = parser.parse_args()
    rounds, inner = (5, 20) if options.quick else (15, 40)
    host = EchoHost()
    empty, busy = _request(0), _request(200)
    bare_source = empty.source.replace("Keep.workflow", "(d => d)")
    run_phase(empty, host)
    builds = itertools.count()
    consumer, peek_host = _consumer_requests(), PeekHost()
    _consumer_run(consumer, peek_host)

    with ProcessIsolation(prestart=1) as pool:
        pool.run(empty, host)
        samples = _rounds(
            {
                "bare": (lambda: _bare(bare_source), inner),
                "phase": (lambda: run_phase(empty, host), inner),
                "phase_fresh": (_without_realms(lambda: run_phase(empty, host)), inner),
                "realm_build": (
                    lambda: _build_realm(empty, host, next(builds)),
                    max(inner // 10, 2),
                ),
                "calls": (lambda: run_phase(busy, host), max(inner // 10, 2)),
                "consumer": (lambda: _consumer_run(consumer, peek_host), max(inner // 4, 2)),
                "consumer_fresh": (
                    _without_realms(lambda: _consumer_run(consumer, peek_host)),
                    max(inner // 4, 2),
                ),
                "pooled": (lambda: pool.run(empty, host), max(inner // 4, 2)),
                "pooled_calls": (lambda: pool.run(busy, host), 2),
            },
            rounds,
        )
    with ProcessIsolation(reuse=False) as fresh_isolation:
        fresh = min(_time_us(lambda: fresh_isolation.run(empty, host), 1) for _ in range(3))
    big_rounds = 2 if options.quick else 3
    one, ten = _big_request(1), _big_request(10)
    with ProcessIsolation(prestart=1) as big_pool:
        big = _rounds(
            {
                "in_1": (lambda: _completed(run_phase(one, host)), 1),
                "in_10": (lambda: _completed(run_phase(ten, host)), 1),
                "pool_1": (lambda: _completed(big_pool.run(one, host)), 1),
                "pool_10": (lambda: _completed(big_pool.run(ten, host)), 1),
            },
            big_rounds,
        )
    big_best = {name: min(values) / 1000 for name, values in big.items()}

    best = {name: min(values) for name, values in samples.items()}
    middle = {name: statistics.median(values) for name, values in samples.items()}
    bare, phase = best["bare"], best["phase"]
    overhead = phase - bare
    round_trip = (best["calls"] - phase) / 200
    pooled_trip = (best["pooled_calls"] - best["pooled"]) / 200
    rows = [
        ("bare Context() + module + jobs (baseline)", bare, middle["bare"], ""),
        ("in-process phase (run_phase)", phase, middle["phase"], f"overhead {overhead:.0f} us"),
        (
            "in-process phase, fresh context (no realm)",
            best["phase_fresh"],
            middle["phase_fresh"],
            f"realm / fresh {phase / best['phase_fresh']:.2f}",
        ),
        ("a phase that builds its realm", best["realm_build"], middle["realm_build"], ""),
        (
            "in-process host call round trip",
            round_trip,
            (middle["calls"] - middle["phase"]) / 200,
            "",
        ),
        (
            "consumer run: prepare + mutate + next",
            best["consumer"],
            middle["consumer"],
            f"{best['consumer'] / 3:.0f} us per phase",
        ),
        (
            "consumer run, fresh contexts (no realm)",
            best["consumer_fresh"],
            middle["consumer_fresh"],
            f"realm / fresh {best['consumer'] / best['consumer_fresh']:.2f}",
        ),
        ("pooled worker phase (ProcessIsolation)", best["pooled"], middle["pooled"], ""),
        (
            "pooled worker host call round trip",
            pooled_trip,
            (middle["pooled_calls"] - middle["pooled"]) / 200,
            "",
        ),
        ("fresh worker per phase (reuse=False)", fresh, fresh, ""),
    ]
    print(f"{rounds} interleaved rounds; 'best' is the fastest round, 'median' the middle one")
    print(f"{'measurement':<44}{'best us':>10}{'median us':>11}{'x baseline':>12}  note")
    for name, value, median, note in rows:
        print(f"{name:<44}{value:>10.1f}{median:>11.1f}{value / bare:>12.2f}  {note}")
    print()
    print(f"target: phase overhead <= 1000 us -> {'met' if overhead <= 1000 else 'MISSED'}")
    print(f"target: host call <= 30 us -> {'met' if round_trip <= 30 else 'MISSED'}")
    print(f"issue 20 target: phase overhead <= 250 us -> {'met' if overhead <= 250 else 'MISSED'}")
    consumer_ms = best["consumer"] / 1000
    verdict = "met" if consumer_ms <= 2 else "MISSED"
    print(f"issue 20 target: consumer run phases <= 2 ms -> {consumer_ms:.2f} ms, {verdict}")
    print()
    print(f"large results, best of {big_rounds} (ms): 1 MB, 10 MB, ratio")
    for label, key in (("in process", "in"), ("pooled worker", "pool")):
        small, large = big_best[f"{key}_1"], big_best[f"{key}_10"]
        print(f"  {label:<16}{small:>9.1f}{large:>10.1f}{large / small:>8.2f}")
    ratio = big_best["pool_10"] / big_best["pool_1"]
    print(f"target: pooled 10 MB / 1 MB <= 12 -> {'met' if ratio <= 12 else 'MISSED'}")


def _completed(result: object) -> None:
    outcome = getattr(result, "outcome", None)
    if getattr(outcome, "kind", None) != "completed":
        raise SystemExit(f"the large-result phase did not complete: {outcome}")


if __name__ == "__main__":
    main()
