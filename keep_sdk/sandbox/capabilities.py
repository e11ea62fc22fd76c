"""The phase table: what `ctx` offers in each handler phase, and the host-side check.

| operation                    | producer | prepare | mutate                        | next |
|------------------------------|----------|---------|-------------------------------|------|
| connector read               | yes      | yes     | no                            | no   |
| connector read-by-id         | yes      | yes     | with ``mutate_reads="by_id"`` | no   |
| connector mutation           | no       | no      | at most one, terminal         | no   |
| ``peek``, ``getByIds``       | no       | yes     | no                            | no   |
| ``publish``                  | yes      | no      | no                            | yes  |

The sandbox builds ``ctx`` from `Capabilities.exposed` (forbidden operations are
absent) and checks every call that reaches the host with `Capabilities.check`, so
an operation the phase forbids is refused even if it was reached some other way.
"""

from __future__ import annotations

from dataclasses import dataclass

from keep_sdk.connectors.manifest import Manifest, OperationManifest
from keep_sdk.errors import PhaseViolation
from keep_sdk.model import HandlerPhase, HostPolicy, OperationKind

__all__ = ["TOPIC_OPERATIONS", "Capabilities", "allowed_kinds", "allowed_topic_operations"]

TOPIC_OPERATIONS: tuple[str, ...] = ("getByIds", "peek", "publish")
"""The ctx operations on topics, handled by the runtime's host interface."""

_TOPIC_PHASES: dict[str, frozenset[HandlerPhase]] = {
    "peek": frozenset({HandlerPhase.PREPARE}),
    "getByIds": frozenset({HandlerPhase.PREPARE}),
    "publish": frozenset({HandlerPhase.PRODUCER, HandlerPhase.NEXT}),
}

_KIND_WORDS = {
    OperationKind.READ: "a connector read",
    OperationKind.READ_BY_ID: "a connector read-by-id",
    OperationKind.MUTATION: "a connector mutation",
}


def allowed_kinds(phase: HandlerPhase, policy: HostPolicy) -> frozenset[OperationKind]:
    """The connector operation kinds `phase` may call under `policy`."""
    if phase in (HandlerPhase.PRODUCER, HandlerPhase.PREPARE):
        return frozenset({OperationKind.READ, OperationKind.READ_BY_ID})
    if phase is HandlerPhase.MUTATE:
        if policy.mutate_reads == "by_id":
            return frozenset({OperationKind.MUTATION, OperationKind.READ_BY_ID})
        return frozenset({OperationKind.MUTATION})
    return frozenset()


def allowed_topic_operations(phase: HandlerPhase) -> tuple[str, ...]:
    """The topic operations `phase` may call, sorted."""
    return tuple(op for op in TOPIC_OPERATIONS if phase in _TOPIC_PHASES[op])


def _where_allowed(kind: OperationKind, policy: HostPolicy) -> str:
    phases = [p.value for p in HandlerPhase if kind in allowed_kinds(p, policy)]
    return ", ".join(phases) if phases else "no phase"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The ctx of one phase: connector operations by ``connector.operation`` and topic ops.

    `exposed` is what the script's ``ctx`` contains; it equals the allowed set unless
    a test widens it on purpose to prove that `check` refuses at the host.
    """

    phase: HandlerPhase
    manifest: Manifest
    policy: HostPolicy
    operations: dict[str, OperationManifest]
    topic_operations: tuple[str, ...]

    @classmethod
    def for_phase(cls, manifest: Manifest, phase: HandlerPhase, policy: HostPolicy) -> Capabilities:
        """The capabilities the phase table grants `phase`."""
        kinds = allowed_kinds(phase, policy)
        operations = {
            f"{connector.name}.{op.name}": op
            for connector in manifest.connectors
            for op in connector.operations
            if op.kind in kinds
        }
        return cls(phase, manifest, policy, operations, allowed_topic_operations(phase))

    @classmethod
    def everything(
        cls, manifest: Manifest, phase: HandlerPhase, policy: HostPolicy
    ) -> Capabilities:
        """Every operation of `manifest` and every topic op: only for exposing, never checking."""
        operations = {
            f"{connector.name}.{op.name}": op
            for connector in manifest.connectors
            for op in connector.operations
        }
        return cls(phase, manifest, policy, operations, TOPIC_OPERATIONS)

    def is_mutation(self, name: str) -> bool:
        """Whether `name` is a connector mutation."""
        op = self.operations.get(name)
        return op is not None and op.kind is OperationKind.MUTATION

    def check(self, name: str) -> OperationManifest | None:
        """The operation `name` refers to (None for a topic op), if this phase allows it.

        Raises `PhaseViolation` for an operation the phase forbids, and
        `UnknownOperation`/`UnknownConnector` for one no connector declares.
        """
        phase = self.phase.value
        if name in TOPIC_OPERATIONS:
            if name in self.topic_operations:
                return None
            allowed = ", ".join(sorted(p.value for p in _TOPIC_PHASES[name]))
            raise PhaseViolation(
                f"ctx.{name} is not allowed in {phase}; it is allowed only in: {allowed}",
                operation=name,
                phase=phase,
            )
        op = self.operations.get(name)
        if op is not None:
            return op
        connector, _, operation = name.partition(".")
        declared = self.manifest.operation(connector, operation)
        raise PhaseViolation(
            f"ctx.{name} is {_KIND_WORDS[declared.kind]}, which is not allowed in {phase}; "
            f"it is allowed only in: {_where_allowed(declared.kind, self.policy)}",
            operation=name,
            phase=phase,
        )
