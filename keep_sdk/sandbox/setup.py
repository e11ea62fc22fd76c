"""What a phase computes from its workflow version alone, computed once per version.

Every phase of a workflow version starts from the same source text, connector
manifest, host policy and phase: the capabilities the phase table grants, the
static part of the prelude's configuration, the source checks and the marked
source do not change between runs. `setup_for` memoizes them in a bounded,
least-recently-used table keyed by the identity of the manifest and policy
objects (the entry keeps both alive, so an identity cannot be reused while it is
a key) and the source text. Only host-side Python values are kept: nothing here
is, or refers to, a JS value, and every phase still gets a fresh context.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from keep_sdk.contract.manifest import Manifest
from keep_sdk.model import HandlerPhase, HostPolicy
from keep_sdk.sandbox.capabilities import Capabilities
from keep_sdk.sandbox.outcome import Determinism
from keep_sdk.sandbox.returns import MARKER, Marked, mark_returns

__all__ = [
    "MAX_LINE_CHARS",
    "SETUP_CAPACITY",
    "PhaseSetup",
    "config_text",
    "phase_fields",
    "setup_for",
]

MAX_LINE_CHARS: Final = 8_192
"""UTF-16 units of one console line the prelude keeps."""

SETUP_CAPACITY: Final = 64
"""Setups kept (one per workflow version, phase and policy in use)."""


@dataclass(frozen=True, slots=True)
class PhaseSetup:
    """What one (source, manifest, policy, phase) needs before its context exists.

    `problem` is the message of a source the engine must not be given (a NUL
    character, a lone surrogate), else None; `marked` is then the source unmarked.
    `config_static` is `config_head` as a whole JSON object (what a kept realm's
    ``next`` is given beside the phase's own fields).
    """

    allowed: Capabilities
    can_mutate: bool
    config_head: str
    config_static: str
    marked: Marked
    problem: str | None


def _source_problem(source: str) -> str | None:
    if "\x00" in source:
        return "the script contains a NUL character; remove it"
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"the script contains a lone surrogate at offset {exc.start}; "
            "it must be valid Unicode text"
        )
    return None


def _config_head(exposed: Capabilities, policy: HostPolicy) -> str:
    """The configuration object's JSON without its closing brace and per-run fields."""
    limits = policy.sandbox
    operations = [
        {
            "connector": name.partition(".")[0],
            "operation": name.partition(".")[2],
            "mutation": exposed.is_mutation(name),
        }
        for name in sorted(exposed.operations)
    ]
    text = json.dumps(
        {
            "operations": operations,
            "topicOperations": list(exposed.topic_operations),
            "maxCalls": limits.max_host_calls,
            "maxValueBytes": limits.max_value_bytes,
            "maxLineChars": min(MAX_LINE_CHARS, max(limits.max_log_bytes, 1)),
            "returnMarker": MARKER,
        }
    )
    return text[:-1]


def phase_fields(
    *, log_budget: int, determinism: Determinism | None, reusable: bool = False
) -> str:
    """The fields of the prelude's configuration that change from phase to phase (a JSON
    object).

    A `reusable` realm replaces ``Math.random`` even without `determinism`: it gets four
    random words drawn here for every phase (``words``), so no phase can learn what an
    earlier one drew; `determinism` gives the replay's seed instead."""
    clock = "null" if determinism is None else str(determinism.clock_ms)
    seed = determinism.seed if determinism is not None else 0
    words = "null"
    if determinism is None and reusable:
        drawn = secrets.randbits(128)
        words = "[" + ",".join(str((drawn >> shift) & 0xFFFFFFFF) for shift in _WORDS) + "]"
    flag = "true" if reusable else "false"
    return (
        f'{{"maxLogBytes":{int(log_budget)},"clock":{clock},"seed":{int(seed)},'
        f'"words":{words},"reusable":{flag}}}'
    )


_WORDS: Final = (0, 32, 64, 96)


def config_text(
    head: str,
    *,
    log_budget: int,
    determinism: Determinism | None,
    reusable: bool = False,
) -> str:
    """The prelude's whole configuration (JSON): a setup's `config_head` and the phase's
    fields (`phase_fields`)."""
    fields = phase_fields(log_budget=log_budget, determinism=determinism, reusable=reusable)
    return f"{head},{fields[1:]}"


def build_setup(
    source: str,
    manifest: Manifest,
    policy: HostPolicy,
    phase: HandlerPhase,
    *,
    exposed: Capabilities | None = None,
) -> PhaseSetup:
    """The setup computed afresh (`setup_for` memoizes it); `exposed` widens the script's
    ``ctx`` without widening what the host allows."""
    allowed = Capabilities.for_phase(manifest, phase, policy)
    problem = _source_problem(source)
    head = _config_head(exposed or allowed, policy)
    return PhaseSetup(
        allowed=allowed,
        can_mutate=any(map(allowed.is_mutation, allowed.operations)),
        config_head=head,
        config_static=head + "}",
        marked=Marked(text=source) if problem else mark_returns(source),
        problem=problem,
    )


_Key = tuple[int, int, HandlerPhase, str]
_table: OrderedDict[_Key, tuple[Manifest, HostPolicy, PhaseSetup]] = OrderedDict()
_lock = threading.Lock()


def setup_for(
    source: str, manifest: Manifest, policy: HostPolicy, phase: HandlerPhase
) -> PhaseSetup:
    """The setup of a phase, computed once per (source, manifest object, policy object,
    phase) while it stays among the `SETUP_CAPACITY` most recently used."""
    key = (id(manifest), id(policy), phase, source)
    with _lock:
        entry = _table.get(key)
        if entry is not None and entry[0] is manifest and entry[1] is policy:
            _table.move_to_end(key)
            return entry[2]
    setup = build_setup(source, manifest, policy, phase)
    with _lock:
        _table[key] = (manifest, policy, setup)
        _table.move_to_end(key)
        while len(_table) > SETUP_CAPACITY:
            _table.popitem(last=False)
    return setup
