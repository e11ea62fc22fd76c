"""What is computed once per workflow version never carries script state between phases.

The sandbox keeps per-version host-side values (`keep_sdk.sandbox.setup`) and the
compiled module (`keep_sdk.sandbox.bytecode.ModuleLoader`); every phase still gets a
fresh context. These tests run the same workflow version phase after phase, warm
caches included, in process and in a reused worker, and check that nothing a phase
leaves on the realm is seen by the next one, and that the compiled module behaves
exactly as the module evaluated from source.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.model import HandlerPhase, HostPolicy
from keep_sdk.sandbox import Completed, PhaseRequest, PhaseResult, ProcessIsolation, run_phase
from keep_sdk.sandbox import engine as sandbox_engine
from keep_sdk.sandbox.bytecode import ModuleLoader
from keep_sdk.sandbox.setup import SETUP_CAPACITY, setup_for
from keep_sdk.sandbox.stack import safe_stack_bytes
from tests.sandbox.helpers import (
    FAST_LIMITS,
    FAST_POLICY,
    MANIFEST,
    RecordingHost,
    request,
    script_headers,
)

TARGETS = (
    "globalThis",
    "Object.prototype",
    "Array.prototype",
    "Function.prototype",
    "String.prototype",
    "Promise.prototype",
    "Error.prototype",
    "Map.prototype",
    "Set.prototype",
    "RegExp.prototype",
    "Number.prototype",
    "Symbol.prototype",
    "Math",
    "JSON",
    "Reflect",
    "Keep",
    "console",
    "Date",
    "Map",
    "Uint8Array.prototype",
)
"""Objects every phase's realm shares by name: the global, intrinsics, the prelude's."""


def _leaky_script(target: str, key: str) -> str:
    """A consumer whose every phase reports what an earlier phase left on `target[key]`,
    on the global and in the module-level counter, then leaves its own marks there.

    A mark is a string ``left by PHASE`` or the number 1; ``wrote`` says whether this
    phase's mark held in its own realm (it cannot on a frozen object)."""
    marks = "(v) => typeof v === 'string' && v.startsWith('left by ') || v === 1"
    read = (
        f"(() => {{ try {{ const v = {target}[{key!r}]; "
        f"return ({marks})(v) ? String(v) : null; }} catch (e) {{ return null; }} }})()"
    )
    look = f"""
      const seen = {{ found: {read}, loads, global: typeof globalThis.leftBehind }};
      try {{ {target}[{key!r}] = "left by " + phaseName; }} catch (e) {{}}
      try {{ Object.defineProperty({target}, {key!r}, {{ value: 1, configurable: true }}); }}
      catch (e) {{}}
      globalThis.leftBehind = phaseName;
      const wrote = {read} !== null;
    """
    return (
        "let loads = 0;\n"
        "loads += 1;\n"
        "let phaseName = 'module';\n"
        "export default Keep.workflow({\n"
        "  consumers: { c: Keep.consumer({\n"
        "    async prepare(ctx, state) { phaseName = 'prepare';\n"
        f"{look}\n      return {{ reservations: [], data: {{ seen, wrote }} }}; }},\n"
        "    async mutate(ctx, prepared) { phaseName = 'mutate';\n"
        f"{look}\n      await ctx.sheets.appendRow({{ values: [{{ seen, wrote }}] }}); }},\n"
        "    async next(ctx, prepared, mutationResult) { phaseName = 'next';\n"
        f"{look}\n      return {{ seen, wrote }}; }},\n"
        "  }) },\n"
        "});\n"
    )


CLEAN_SIGHT = {"found": None, "loads": 1, "global": "undefined"}


def _sight(result: PhaseResult) -> Any:
    return _report(result)["seen"]


def _report(result: PhaseResult) -> Any:
    outcome = result.outcome
    if outcome.kind == "mutation_requested":
        return outcome.arguments["values"][0]  # type: ignore[union-attr,index]
    assert isinstance(outcome, Completed), outcome
    value = outcome.result
    if isinstance(value, dict) and "data" in value:
        return value["data"]
    return value


def _phases(source: str) -> list[PhaseRequest]:
    return [
        request(source, HandlerPhase.PREPARE, state=None),
        request(source, HandlerPhase.MUTATE, prepared={"data": {}}),
        request(source, HandlerPhase.NEXT, prepared={"data": {}}, mutation_result={}),
    ]


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessIsolation]:
    with ProcessIsolation(prestart=1) as isolation:
        yield isolation


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    target=st.sampled_from(TARGETS),
    key=st.sampled_from(["leak", "toString", "then", "constructor", "__proto__x", "0"]),
)
def test_nothing_a_phase_leaves_on_the_realm_reaches_the_next_phase(target: str, key: str) -> None:
    source = _leaky_script(target, key)
    host = RecordingHost()
    for _round in range(3):
        for phase_request in _phases(source):
            result = run_phase(phase_request, host)
            assert _sight(result) == CLEAN_SIGHT, (target, key, phase_request.phase, result)


def test_the_warm_caches_are_the_ones_the_phases_used() -> None:
    source = _leaky_script("globalThis", "leak")
    first = _phases(source)
    for phase_request in first:
        run_phase(phase_request, RecordingHost())
    again = _phases(source)
    for before, after in zip(first, again, strict=True):
        assert setup_for(after.source, MANIFEST, FAST_POLICY, after.phase) is setup_for(
            before.source, MANIFEST, FAST_POLICY, before.phase
        )
        result = run_phase(after, RecordingHost())
        assert _report(result) == {"seen": CLEAN_SIGHT, "wrote": True}
    marked = setup_for(source, MANIFEST, FAST_POLICY, HandlerPhase.NEXT).marked.text
    compiled = sandbox_engine._module_loader().bytecode(
        marked,
        memory_bytes=FAST_LIMITS.memory_bytes,
        stack_bytes=safe_stack_bytes(FAST_LIMITS.stack_bytes),
    )
    assert compiled is not None


def test_a_reused_worker_gives_every_phase_a_clean_realm(pool: ProcessIsolation) -> None:
    source = _leaky_script("globalThis", "leak")
    for _round in range(3):
        for phase_request in _phases(source):
            result = pool.run(phase_request, RecordingHost())
            assert result.isolation == "process"
            assert _sight(result) == CLEAN_SIGHT, result


def test_the_module_counter_starts_again_in_every_phase_of_a_version() -> None:
    source = "let runs = 0;\n" + (
        "export default Keep.workflow({ producers: { h: { handler: async (ctx, state) => {\n"
        "  runs += 1; globalThis.total = (globalThis.total || 0) + 1;\n"
        "  return { runs, total: globalThis.total };\n"
        "} } } });\n"
    )
    results = [run_phase(request(source), RecordingHost()).outcome for _ in range(5)]
    assert all(
        isinstance(outcome, Completed) and outcome.result == {"runs": 1, "total": 1}
        for outcome in results
    ), results


WORKFLOW = (
    "export default Keep.workflow({ producers: { h: { handler: async (ctx, state) => "
    "({ v: globalThis.v ?? null }) } } });\n"
)
MODULE_CASES = {
    "an import": "import x from 'y';\n" + WORKFLOW,
    "a top-level throw": "throw new TypeError('top');\n" + WORKFLOW,
    "a syntax error": "let = ;\n" + WORKFLOW,
    "a top-level await": "await 0; globalThis.v = 1;\n" + WORKFLOW,
    "a rejected top-level await": "await Promise.reject(new RangeError('no'));\n" + WORKFLOW,
    "a top-level loop": "for (;;) {}\n" + WORKFLOW,
    "nesting beyond the stack": "const q = " + "[" * 3000 + "]" * 3000 + ";\n" + WORKFLOW,
    "no workflow": "export default 1;\n",
    "a reserved global": (
        "Object.defineProperty(globalThis, '__keepModuleError', { get() { return 5; } });\n"
        + WORKFLOW
    ),
    "a non-extensible global": "Object.preventExtensions(globalThis);\n" + WORKFLOW,
    "a taken promise name": (
        "Object.defineProperty(globalThis, '__keepModulePromise', { value: 1 });\n" + WORKFLOW
    ),
    "a plain workflow": WORKFLOW,
    "function source text": (
        "function helper(a) { return a + 1; }\nclass A { m() { return 1; } }\n"
        "export default Keep.workflow({ producers: { h: { handler: async () => "
        "[String(helper), String(A), String(new A().m)] } } });\n"
    ),
}


def _comparable(result: PhaseResult) -> dict[str, Any]:
    """The outcome, with measured durations (which differ run to run) blanked."""
    outcome = result.outcome.model_dump(mode="json")
    if isinstance(outcome.get("message"), str):
        outcome["message"] = re.sub(r"\d+\.\d+ s\b", "_ s", outcome["message"])
    return outcome


@pytest.mark.parametrize("case", sorted(MODULE_CASES))
def test_a_compiled_module_ends_exactly_as_the_module_from_source(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _compare_paths(MODULE_CASES[case], FAST_POLICY, monkeypatch)


@pytest.mark.parametrize("kilobytes", [200, 400, 600, 800])
@pytest.mark.parametrize("megabytes", [1, 2])
def test_a_module_near_the_memory_limit_ends_as_from_source(
    kilobytes: int, megabytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = (
        f"const big = {'x' * kilobytes * 1024!r};\n"
        "export default Keep.workflow({ producers: { h: { handler: async () => big.length } } });\n"
    )
    limits = FAST_LIMITS.model_copy(update={"memory_bytes": megabytes * 1024 * 1024})
    _compare_paths(source, HostPolicy(sandbox=limits), monkeypatch)


ADVERSARIAL = [
    path
    for path in sorted(Path(__file__).parent.joinpath("adversarial").glob("*.js"))
    if not any(
        limit in script_headers(path)["expect"] for limit in ("cpu_time", "wall_time", "jobs")
    )
]


@pytest.mark.parametrize("path", ADVERSARIAL, ids=[path.stem for path in ADVERSARIAL])
def test_an_adversarial_script_ends_the_same_compiled_and_from_source(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    phase = script_headers(path)["phase"]
    source = path.read_text("utf-8")
    hosts = RecordingHost(), RecordingHost()
    compiled = run_phase(request(source, phase), hosts[0])
    monkeypatch.setattr(ModuleLoader, "_kept", lambda _self, _key: (True, None))
    from_source = run_phase(request(source, phase), hosts[1])
    assert _comparable(compiled) == _comparable(from_source)
    assert hosts[0].calls == hosts[1].calls


def _compare_paths(source: str, policy: HostPolicy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The phase ends the same with the module loaded from bytecode (when it compiles)
    and evaluated from source. A module that leaves the global object unable to hand it
    over is loaded twice: the realm is dropped and the phase runs in a context of its own."""
    limits = policy.sandbox
    loads: list[object] = []
    load_bytecode = ModuleLoader._load_bytecode

    def counted(*args: Any) -> Any:
        loads.append(args)
        return load_bytecode(*args)

    monkeypatch.setattr(ModuleLoader, "_load_bytecode", staticmethod(counted))
    compiled = run_phase(request(source, policy=policy), RecordingHost())
    marked = setup_for(source, MANIFEST, policy, HandlerPhase.PRODUCER).marked.text
    compiles = sandbox_engine._module_loader().bytecode(
        marked,
        memory_bytes=limits.memory_bytes,
        stack_bytes=safe_stack_bytes(limits.stack_bytes),
    )
    compiled_loads = len(loads)
    assert (compiled_loads > 0) == (compiles is not None)
    monkeypatch.setattr(ModuleLoader, "_kept", lambda _self, _key: (True, None))
    from_source = run_phase(request(source, policy=policy), RecordingHost())
    assert len(loads) == compiled_loads
    assert _comparable(compiled) == _comparable(from_source)


def test_the_plain_cases_take_the_compiled_path() -> None:
    for case in (
        "a plain workflow",
        "function source text",
        "a top-level await",
        "a top-level throw",
    ):
        marked = setup_for(
            MODULE_CASES[case], MANIFEST, FAST_POLICY, HandlerPhase.PRODUCER
        ).marked.text
        compiled = sandbox_engine._module_loader().bytecode(
            marked,
            memory_bytes=FAST_LIMITS.memory_bytes,
            stack_bytes=safe_stack_bytes(FAST_LIMITS.stack_bytes),
        )
        assert compiled is not None, case


def test_a_changed_source_never_runs_the_bytecode_of_the_old_one() -> None:
    results = []
    for value in (1, 2, 1, 3):
        source = (
            "export default Keep.workflow({ producers: { h: { handler: async () => "
            f"({value}) }} }} }});\n"
        )
        outcome = run_phase(request(source), RecordingHost()).outcome
        assert isinstance(outcome, Completed)
        results.append(outcome.result)
    assert results == [1, 2, 1, 3]


def test_a_phase_with_other_limits_gets_its_own_setup() -> None:
    source = (
        "export default Keep.workflow({ producers: { h: { handler: async (ctx) => {\n"
        "  for (let i = 0; i < 3; i++) await ctx.gmail.search({ i });\n"
        "  return 'done';\n"
        "} } } });\n"
    )
    few = HostPolicy(sandbox=FAST_LIMITS.model_copy(update={"max_host_calls": 2}))
    assert run_phase(request(source, policy=few), RecordingHost()).outcome.kind == (
        "limit_exceeded"
    )
    outcome = run_phase(request(source), RecordingHost()).outcome
    assert isinstance(outcome, Completed)
    assert outcome.result == "done"
    assert run_phase(request(source, policy=few), RecordingHost()).outcome.kind == (
        "limit_exceeded"
    )


def test_the_setup_table_is_bounded() -> None:
    from keep_sdk.sandbox import setup as setup_module

    for index in range(SETUP_CAPACITY + 5):
        setup_for(f"// {index}\n" + WORKFLOW, MANIFEST, FAST_POLICY, HandlerPhase.PRODUCER)
    assert len(setup_module._table) == SETUP_CAPACITY
