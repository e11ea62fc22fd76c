"""The phase table: which operations each handler phase may call. Security policy, written once.

| operation                    | producer | prepare | mutate                        | next |
|------------------------------|----------|---------|-------------------------------|------|
| connector read               | yes      | yes     | no                            | no   |
| connector read-by-id         | yes      | yes     | with ``mutate_reads="by_id"`` | no   |
| connector mutation           | no       | no      | at most one, terminal         | no   |
| connector durable operation  | no       | no      | at most one, terminal         | no   |
| ``peek``, ``getByIds``       | no       | yes     | no                            | no   |
| ``publish``                  | yes      | no      | no                            | yes  |

The validator rule ``phase-forbidden-call``, the sandbox (which builds each
phase's ``ctx`` from this table and checks calls against it) and the runtime
host (which checks every call again) all read `PHASE_TABLE` through the
functions below; none of them encodes a phase rule of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from keep_sdk.model import HandlerPhase, OperationKind

__all__ = [
    "MUTATING_KINDS",
    "PHASE_TABLE",
    "TOPIC_OPERATIONS",
    "MutateReads",
    "allowed_kinds",
    "allowed_phases",
    "allowed_topic_operations",
    "where_allowed",
]

MutateReads = Literal["none", "by_id"]
"""The host policy's ``mutate_reads``: ``"by_id"`` also allows read-by-id in ``mutate``."""

TOPIC_OPERATIONS: tuple[str, ...] = ("getByIds", "peek", "publish")
"""The ctx operations on topics (sorted), served by the runtime rather than a connector."""

_PRODUCER = HandlerPhase.PRODUCER
_PREPARE = HandlerPhase.PREPARE
_MUTATE = HandlerPhase.MUTATE
_NEXT = HandlerPhase.NEXT

PHASE_TABLE: Mapping[OperationKind | str, frozenset[HandlerPhase]] = MappingProxyType(
    {
        OperationKind.READ: frozenset({_PRODUCER, _PREPARE}),
        OperationKind.READ_BY_ID: frozenset({_PRODUCER, _PREPARE}),
        OperationKind.MUTATION: frozenset({_MUTATE}),
        OperationKind.DURABLE: frozenset({_MUTATE}),
        "peek": frozenset({_PREPARE}),
        "getByIds": frozenset({_PREPARE}),
        "publish": frozenset({_PRODUCER, _NEXT}),
    }
)
"""Operation (a connector operation kind, or a topic operation name) → the phases that allow it,
under the default policy (``mutate_reads="none"``)."""

MUTATING_KINDS: frozenset[OperationKind] = frozenset(
    {OperationKind.MUTATION, OperationKind.DURABLE}
)
"""Kinds a script uses as its one terminal mutation; a durable one parks the run until the
external work completes."""

_BY_ID_READS: Mapping[OperationKind | str, frozenset[HandlerPhase]] = MappingProxyType(
    {OperationKind.READ_BY_ID: frozenset({_MUTATE})}
)
"""Cells the policy ``mutate_reads="by_id"`` adds to `PHASE_TABLE`."""


def allowed_phases(
    operation: OperationKind | str, mutate_reads: MutateReads = "none"
) -> frozenset[HandlerPhase]:
    """The phases that may call `operation` (a kind or a topic operation name).

    An operation the table does not know is allowed nowhere (the empty set).
    """
    phases = PHASE_TABLE.get(operation, frozenset())
    if mutate_reads == "by_id":
        phases = phases | _BY_ID_READS.get(operation, frozenset())
    return phases


def allowed_kinds(
    phase: HandlerPhase, mutate_reads: MutateReads = "none"
) -> frozenset[OperationKind]:
    """The connector operation kinds `phase` may call."""
    return frozenset(kind for kind in OperationKind if phase in allowed_phases(kind, mutate_reads))


def allowed_topic_operations(phase: HandlerPhase) -> tuple[str, ...]:
    """The topic operations `phase` may call, sorted."""
    return tuple(op for op in TOPIC_OPERATIONS if phase in PHASE_TABLE[op])


def where_allowed(operation: OperationKind | str, mutate_reads: MutateReads = "none") -> str:
    """The phases allowing `operation`, in phase order, for messages: ``"producer, prepare"``."""
    allowed = allowed_phases(operation, mutate_reads)
    return ", ".join(p.value for p in HandlerPhase if p in allowed) or "no phase"
