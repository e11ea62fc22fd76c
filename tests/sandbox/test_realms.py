"""Realms run again for later phases of a workflow version: nothing a phase does reaches
the next one except what the contract passes, and a realm that cannot promise that is
dropped.

The central property is checked by a fingerprint of everything a script can reach (every
object from the global object, from syntax and through prototypes: keys, attributes,
primitive values, which object each reference is, frozen and extensible): a phase run in a
realm after any number of attacking phases sees the fingerprint of a realm just built.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.contract.manifest import Manifest
from keep_sdk.model import HandlerPhase, HostPolicy
from keep_sdk.sandbox import Completed, Determinism, LimitFailure, MutationRequested, run_phase
from keep_sdk.sandbox import engine as sandbox_engine
from keep_sdk.sandbox.realm import REALM_PHASES, realm_key, realm_policy, realms
from tests.sandbox.helpers import (
    FAST_LIMITS,
    MANIFEST,
    RecordingHost,
    check_outcome,
    consumer,
    request,
    script_headers,
)

FINGERPRINT = r"""
function seeds() {
  return [globalThis, function* () {}, async function () {}, async function* () {}, async () => {},
    [][Symbol.iterator](), new Map().entries(), new Set().values(), ""[Symbol.iterator](),
    /a/g[Symbol.matchAll](""), [].values().map((v) => v),
    Iterator.from({ next() { return { done: true }; } }),
    (function () { return arguments; })(), Object.getPrototypeOf(Uint8Array), Promise.resolve()];
}
function reachable() {
  const paths = new Map();
  const order = [];
  const queue = seeds().map((value, i) => [value, "seed" + i]);
  for (let at = 0; at < queue.length; at++) {
    const [value, path] = queue[at];
    if (value === null || (typeof value !== "object" && typeof value !== "function")) continue;
    if (paths.has(value)) continue;
    paths.set(value, path);
    order.push(value);
    queue.push([Object.getPrototypeOf(value), path + ".<proto>"]);
    for (const key of Reflect.ownKeys(value)) {
      const d = Object.getOwnPropertyDescriptor(value, key);
      const name = path + "." + String(key);
      if ("value" in d) queue.push([d.value, name]);
      else { queue.push([d.get, name + "<get>"]); queue.push([d.set, name + "<set>"]); }
    }
  }
  return { paths, order };
}
function shown(value, paths) {
  if (value !== null && (typeof value === "object" || typeof value === "function")) {
    return "@" + paths.get(value);
  }
  const text =
    typeof value === "symbol" ? String(value) : Object.is(value, -0) ? "-0" : String(value);
  return typeof value + ":" + text;
}
function fingerprint() {
  const { paths, order } = reachable();
  let hash = 2166136261;
  let lines = 0;
  for (const value of order) {
    let line = paths.get(value) + "|" + typeof value + "|" + Object.isFrozen(value) + "|" +
      Object.isExtensible(value) + "|" + shown(Object.getPrototypeOf(value), paths);
    for (const key of Reflect.ownKeys(value)) {
      const d = Object.getOwnPropertyDescriptor(value, key);
      line += "|" + String(key) + ":" + d.writable + d.enumerable + d.configurable + ":" +
        ("value" in d ? shown(d.value, paths) : shown(d.get, paths) + "/" + shown(d.set, paths));
    }
    for (let i = 0; i < line.length; i++) {
      hash = Math.imul(hash ^ line.charCodeAt(i), 16777619) >>> 0;
    }
    lines++;
  }
  return { objects: lines, hash };
}
function attack(seed, count, spareGlobal) {
  let s = seed >>> 0 || 1;
  const next = (n) => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s % n;
  };
  const { order } = reachable();
  const marker = { leaked: seed };
  let changed = 0;
  for (let i = 0; i < count; i++) {
    const target = spareGlobal
      ? order[1 + next(order.length - 1)]
      : next(4) === 0 ? globalThis : order[next(order.length)];
    const keys = Reflect.ownKeys(target);
    const key = keys.length > 0 && next(2) === 0 ? keys[next(keys.length)] : "leak" + next(5);
    try {
      switch (next(8)) {
        case 0: target[key] = marker; break;
        case 1: Object.defineProperty(target, key, { value: marker, configurable: false }); break;
        case 2: delete target[key]; break;
        case 3: Object.setPrototypeOf(target, null); break;
        case 4: Object.preventExtensions(target); break;
        case 5: {
          const d = Object.getOwnPropertyDescriptor(target, key);
          if (d && d.set) d.set.call(target, marker);
          break;
        }
        case 6: Reflect.set(target, key, marker, target); break;
        default: Object.freeze(target);
      }
      changed++;
    } catch (ignored) {}
  }
  Promise.resolve().then(() => { Map.prototype.later = marker; });
  return changed;
}
let moduleState = "fresh";
export default Keep.workflow({
  producers: {
    look: { handler: async (ctx, state) => ({ print: fingerprint(), moduleState }) },
    attack: { handler: async (ctx, state) => {
      moduleState = "attacked";
      return { changed: attack(state.seed, state.count, state.spareGlobal === true) };
    } },
    poke: { handler: async (ctx, state) => {
      try { Map.prototype.leak = 1; } catch (refused) { return String(refused.name); }
      return "written";
    } },
  },
});
"""


@pytest.fixture(autouse=True)
def no_realms_from_other_tests() -> Iterator[None]:
    realms.clear()
    yield
    realm_policy.after = 0
    realms.clear()


CLOCK = Determinism(clock=dt.datetime(2026, 11, 27, tzinfo=dt.UTC), seed=7)
"""A fixed clock: a fresh context's ``performance.timeOrigin`` would differ run to run."""


def _request(handler: str, state: Any = None, *, source: str = FINGERPRINT) -> Any:
    return request(source, HandlerPhase.PRODUCER, handler=handler, state=state, determinism=CLOCK)


def _producer(handler: str, state: Any = None, *, source: str = FINGERPRINT) -> Any:
    result = run_phase(_request(handler, state, source=source), RecordingHost())
    assert isinstance(result.outcome, Completed), result.outcome
    return result.outcome.result


def _attack(seed: int, *, spare_global: bool = False) -> None:
    """An attacking phase; it may break itself (a fresh context is not locked down)."""
    state = {"seed": seed, "count": 200, "spareGlobal": spare_global}
    run_phase(_request("attack", state), RecordingHost())


def _kept(source: str = FINGERPRINT) -> Any:
    return realms.peek(realm_key(_request("look", source=source)))


def _fresh_look() -> Any:
    """The fingerprint a phase sees in a fresh context (no realm)."""
    realm_policy.after = None
    try:
        return _producer("look")
    finally:
        realm_policy.after = 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seeds=st.lists(st.integers(1, 2**32 - 1), min_size=1, max_size=3))
def test_after_any_attacks_the_next_phase_sees_a_new_realm_or_a_fresh_context(
    seeds: list[int],
) -> None:
    """An attack that changed the global object spoils the realm: the next phase runs in a
    context of its own. Any other attack leaves the realm as it was built. Both look the
    same to a script as a realm just built."""
    fresh = _fresh_look()
    realms.clear()
    new = _producer("look")
    assert _kept() is not None
    for seed in seeds:
        _attack(seed)
    after = _producer("look")
    assert after == new == fresh
    assert after["moduleState"] == "fresh"


def test_attacks_that_leave_the_global_object_alone_keep_the_realm() -> None:
    """The fingerprint test has teeth only if realms are really run again after attacks."""
    kept = 0
    for seed in range(1, 41):
        realms.clear()
        new = _producer("look")
        built = _kept()
        _attack(seed, spare_global=True)
        after = _producer("look")
        kept += _kept() is built
        assert after == new
    assert kept == 40, kept


def test_without_the_lockdown_a_write_to_an_intrinsic_reaches_the_next_phase(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fingerprint sees what the lockdown prevents: with it removed from the prelude, a
    phase's write to ``Map.prototype`` is there for the next phase of the same realm."""
    assert _producer("poke") == "TypeError"
    source = sandbox_engine.prelude_source()
    assert source.count(" lockDown();") == 1
    weakened = sandbox_engine.PreludeLoader(source.replace(" lockDown();", " "))
    monkeypatch.setattr(sandbox_engine, "_prelude_loader", lambda: weakened)
    realms.clear()
    new = _producer("look")
    built = _kept()
    assert _producer("poke") == "written"
    after = _producer("look")
    assert _kept() is built
    assert after["print"] != new["print"]


def _phase(source: str, phase: HandlerPhase | str = HandlerPhase.PRODUCER, **fields: Any) -> Any:
    return run_phase(request(source, phase, **fields), RecordingHost())


def _key(source: str, phase: HandlerPhase | str = HandlerPhase.PRODUCER, **fields: Any) -> Any:
    return realm_key(request(source, phase, **fields))


IMPORTER = """
let runs = 0;
export default Keep.workflow({ producers: { h: { handler: async () => {
  runs += 1;
  const ns = await import("<input>");
  return { runs, exported: Object.keys(ns) };
} } } });
"""


def test_an_earlier_phases_module_cannot_be_imported() -> None:
    """``import("<input>")`` reaches the first module of a context: in a realm that is an
    empty decoy, never the module of an earlier phase (which holds its state)."""
    first = _phase(IMPORTER)
    again = _phase(IMPORTER)
    assert realms.peek(_key(IMPORTER)) is not None
    assert first.outcome == again.outcome == Completed(result={"runs": 1, "exported": []})


CLOCKED = """
export default Keep.workflow({ producers: { h: { handler: async () => [
  Date.now(), new Date().toISOString(), performance.timeOrigin, performance.now(),
  Math.random(), Math.random(),
] } } });
"""


def test_each_phase_in_a_realm_gets_its_own_clock_and_its_seed_from_the_start() -> None:
    clocks = [
        Determinism(clock=dt.datetime(2026, 1, day, tzinfo=dt.UTC), seed=seed)
        for day, seed in ((1, 7), (2, 7), (3, 8), (4, 7))
    ]
    in_realm = [_phase(CLOCKED, determinism=clock).outcome for clock in clocks]
    assert realms.peek(_key(CLOCKED, determinism=clocks[0])) is not None
    realm_policy.after = None
    fresh = [_phase(CLOCKED, determinism=clock).outcome for clock in clocks]
    assert in_realm == fresh
    assert [outcome.result[0] for outcome in in_realm] == [c.clock_ms for c in clocks]
    assert in_realm[0].result[4:] == in_realm[1].result[4:] == in_realm[3].result[4:]
    assert in_realm[2].result[4:] != in_realm[0].result[4:]


RANDOM = """
export default Keep.workflow({ producers: { h: {
  handler: async () => [Math.random(), Math.random()],
} } });
"""


def test_without_a_fixed_clock_each_phase_in_a_realm_draws_other_numbers() -> None:
    drawn = [_phase(RANDOM).outcome.result for _ in range(6)]
    assert realms.peek(_key(RANDOM)) is not None
    assert len({tuple(values) for values in drawn}) == 6
    assert all(0 <= value < 1 for values in drawn for value in values)


CTX_KEYS = """
export default Keep.workflow({
  producers: { h: { handler: async (ctx) => Object.keys(ctx).sort() } },
});
"""


def test_each_phase_in_a_realm_gets_the_configuration_of_its_own_manifest() -> None:
    """Phases of one realm with ten connector manifests (more than a realm keeps parsed, so
    the oldest are parsed again), in turn and twice over: each phase's ``ctx`` is the one
    its own manifest gives, as in a fresh context."""
    mail = MANIFEST.connectors[0]
    manifests = [
        Manifest(connectors=[mail.model_copy(update={"name": f"mail{i}"})]) for i in range(10)
    ]
    for _ in range(2):
        for i, manifest in enumerate(manifests):
            phase = request(CTX_KEYS).model_copy(update={"manifest": manifest})
            result = run_phase(phase, RecordingHost())
            assert result.outcome == Completed(result=[f"mail{i}", "publish"])
    assert realms.peek(_key(CTX_KEYS)) is not None


def _built_then(source: str, phase: HandlerPhase | str = HandlerPhase.PRODUCER) -> Any:
    """Build the realm of `source` with a phase that leaves it clean, then run `phase`."""
    first = _phase(source, phase)
    built = realms.peek(_key(source, phase))
    assert built is not None, first.outcome
    return built, _phase(source, phase)


def test_module_state_starts_afresh_in_each_phase_of_a_realm() -> None:
    """A module-level counter is 1 in every phase: were an earlier phase's module instance
    reused, the second phase would count 2 and spin."""
    source = (
        "let calls = 0;\nexport default Keep.workflow({ producers: { h: { handler: async () => {"
        " calls += 1; if (calls > 1) for (;;) {} return calls; } } } });\n"
    )
    first = _phase(source)
    assert first.outcome == Completed(result=1)
    assert realms.peek(_key(source)) is not None
    spun = _phase(source)
    assert spun.outcome == Completed(result=1)
    assert realms.peek(_key(source)) is not None


SPIN_ON_SECOND = """
export default Keep.workflow({ producers: { h: { handler: async (ctx, state) => {
  if (state && state.spin) for (;;) {}
  return "ok";
} } } });
"""


def test_a_phase_that_is_interrupted_drops_its_realm_and_the_next_builds_another() -> None:
    first = _phase(SPIN_ON_SECOND)
    built = realms.peek(_key(SPIN_ON_SECOND))
    assert first.outcome == Completed(result="ok")
    assert built is not None
    spun = _phase(SPIN_ON_SECOND, state={"spin": True})
    assert isinstance(spun.outcome, LimitFailure)
    assert realms.peek(_key(SPIN_ON_SECOND)) is None
    after = _phase(SPIN_ON_SECOND)
    assert after.outcome == Completed(result="ok")
    rebuilt = realms.peek(_key(SPIN_ON_SECOND))
    assert rebuilt is not None
    assert rebuilt is not built


DETACHED = """
export default Keep.workflow({ producers: { h: { handler: async (ctx, state) => {
  if (state && state.detach) (async () => { for (let i = 0; i < 50; i++) await null; })();
  return "ok";
} } } });
"""


def _dropped_by(source: str, state: Any) -> None:
    """A clean phase of `source` builds its realm; a phase with `state` then completes with
    "ok" and leaves no realm behind."""
    _phase(source)
    assert realms.peek(_key(source)) is not None
    assert _phase(source, state=state).outcome == Completed(result="ok")
    assert realms.peek(_key(source)) is None


def test_a_phase_that_leaves_work_queued_drops_its_realm() -> None:
    _dropped_by(DETACHED, {"detach": True})


GLOBAL_WRITER = """
export default Keep.workflow({ producers: { h: { handler: async (ctx, state) => {
  const seen = globalThis.cache === undefined ? "empty" : "filled";
  if (state && state.write) globalThis.cache = { secret: 1 };
  return seen;
} } } });
"""


def test_a_workflow_that_writes_to_the_global_object_runs_in_fresh_contexts() -> None:
    assert _phase(GLOBAL_WRITER).outcome == Completed(result="empty")
    assert realms.peek(_key(GLOBAL_WRITER)) is not None
    assert _phase(GLOBAL_WRITER, state={"write": True}).outcome == Completed(result="empty")
    assert realms.peek(_key(GLOBAL_WRITER)) is None
    for _ in range(3):
        assert _phase(GLOBAL_WRITER).outcome == Completed(result="empty")
        assert realms.peek(_key(GLOBAL_WRITER)) is None


GLOBAL_CHANGES = {
    "a new property": "globalThis.leak = 1;",
    "a new symbol": "globalThis[Symbol.for('leak')] = 1;",
    "a new accessor": "Object.defineProperty(globalThis, 'leak', { get() { return 1; } });",
    "no extensions": "Object.preventExtensions(globalThis);",
    "a new prototype": "Object.setPrototypeOf(globalThis, Object.create(null));",
}


@pytest.mark.parametrize("change", sorted(GLOBAL_CHANGES))
def test_every_change_the_global_object_allows_drops_the_realm(change: str) -> None:
    """The check counts keys: it sees each change a pinned global object still allows."""
    source = (
        "export default Keep.workflow({ producers: { h: { handler: async (ctx, state) => {\n"
        f"  if (state && state.change) {{ try {{ {GLOBAL_CHANGES[change]} }} catch (e) {{}} }}\n"
        '  return "ok";\n} } } });\n'
    )
    _dropped_by(source, {"change": True})


PINNED_GLOBALS = """
export default Keep.workflow({ producers: { h: { handler: async (ctx, state) => {
  const kept = [Promise, JSON, Math, Array, Date, Keep];
  const tries = {
    assign: () => { Promise = null; },
    assignProperty: () => { globalThis.JSON = null; },
    remove: () => { delete globalThis.Math; },
    redefine: () => { Object.defineProperty(globalThis, "Array", { value: null }); },
    reflect: () => { if (!Reflect.set(globalThis, "Date", null)) throw new TypeError("refused"); },
    accessor: () => { Object.defineProperty(globalThis, "Keep", { get() { return null; } }); },
  };
  const refused = Object.keys(tries).filter((name) => {
    try { tries[name](); return false; } catch (error) { return error instanceof TypeError; }
  });
  globalThis.added = 1;
  delete globalThis.added;
  const same = [Promise, JSON, Math, Array, Date, Keep].every((value, i) => value === kept[i]);
  return { refused, same };
} } } });
"""


@pytest.mark.parametrize("kept", [True, False], ids=["realm", "fresh"])
def test_a_global_the_lockdown_left_cannot_be_written_or_removed(kept: bool) -> None:
    """Every global binding is pinned alike in a realm and in a context that is not kept, so
    a script sees the same refusal in either; a property added and deleted again leaves the
    global object as it was, and the realm is kept."""
    expected = Completed(
        result={
            "refused": ["assign", "assignProperty", "remove", "redefine", "reflect", "accessor"],
            "same": True,
        }
    )
    realm_policy.after = 0 if kept else None
    for _ in range(2):
        assert _phase(PINNED_GLOBALS).outcome == expected
    assert (realms.peek(_key(PINNED_GLOBALS)) is not None) is kept


PLAIN = """
export default Keep.workflow({ producers: { h: { handler: async () => 42 } } });
"""


def test_a_realm_is_built_again_after_its_phases() -> None:
    _phase(PLAIN)
    first = realms.peek(_key(PLAIN))
    for _ in range(REALM_PHASES - 2):
        assert _phase(PLAIN).outcome == Completed(result=42)
        assert realms.peek(_key(PLAIN)) is first
    assert _phase(PLAIN).outcome == Completed(result=42)
    assert realms.peek(_key(PLAIN)) is None
    _phase(PLAIN)
    second = realms.peek(_key(PLAIN))
    assert second is not None
    assert second is not first


HOARDER = """
export default Keep.workflow({ producers: { h: { handler: async (ctx, state) => {
  if (state && state.hoard) {
    const held = { big: "x".repeat(2 * 1024 * 1024) + String(Math.random()) };
    if (state.cycle) held.self = held;
  }
  return "ok";
} } } });
"""


def test_a_realm_holding_more_memory_than_it_started_with_is_dropped() -> None:
    """What a phase leaves for the cycle collector (here a 2 MiB string held by a cycle) is
    memory the next phase would not have: the realm is dropped."""
    limits = FAST_LIMITS.model_copy(update={"memory_bytes": 32 * 1024 * 1024})
    policy = HostPolicy(sandbox=limits)
    _phase(HOARDER, policy=policy)
    assert realms.peek(_key(HOARDER, policy=policy)) is not None
    freed = _phase(HOARDER, policy=policy, state={"hoard": True, "cycle": False})
    assert freed.outcome == Completed(result="ok")
    assert realms.peek(_key(HOARDER, policy=policy)) is not None
    hoarded = _phase(HOARDER, policy=policy, state={"hoard": True, "cycle": True})
    assert hoarded.outcome == Completed(result="ok")
    assert realms.peek(_key(HOARDER, policy=policy)) is None


def test_a_consumer_runs_its_three_phases_in_one_realm() -> None:
    source = consumer(
        prepare="return { n: 1 };",
        mutate="await ctx.gmail.send({ to: 'a@example.com' });",
        next_="return { done: prepared.n };",
    )
    outcomes = [
        _phase(source, "prepare").outcome,
        _phase(source, "mutate", prepared={"n": 1}).outcome,
        _phase(source, "next", prepared={"n": 1}, mutation_result={"id": 1}).outcome,
    ]
    realm = realms.peek(_key(source, "prepare"))
    assert realm is not None
    assert realm.phases == 3
    assert outcomes[0] == Completed(result={"n": 1})
    assert isinstance(outcomes[1], MutationRequested)
    assert outcomes[2] == Completed(result={"done": 1})


SCRIPTS = sorted(Path(__file__).parent.joinpath("adversarial").glob("*.js"))


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_an_adversarial_script_ends_as_its_header_says_twice_in_a_realm(path: Path) -> None:
    headers = script_headers(path)
    source = path.read_text("utf-8")
    for _ in range(2):
        result = _phase(source, headers["phase"])
        check_outcome(result, headers["expect"])
