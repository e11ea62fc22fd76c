"""Per-phase capabilities: the ctx a phase gets and the host-side check, from the phase table.

The sandbox builds ``ctx`` from `Capabilities.exposed` (forbidden operations are
absent) and checks every call that reaches the host with `Capabilities.check`, so
an operation the phase forbids is refused even if it was reached some other way.
What each phase allows is `keep_sdk.contract.phases`, the one phase table.
"""

from __future__ import annotations

from dataclasses import dataclass

from keep_sdk.contract.manifest import Manifest, OperationManifest
from keep_sdk.contract.phases import (
    MUTATING_KINDS,
    TOPIC_OPERATIONS,
    allowed_kinds,
    allowed_topic_operations,
    where_allowed,
)
from keep_sdk.errors import PhaseViolation
from keep_sdk.model import HandlerPhase, HostPolicy, OperationKind

__all__ = ["TOPIC_OPERATIONS", "Capabilities"]

_KIND_WORDS = {
    OperationKind.READ: "a connector read",
    OperationKind.READ_BY_ID: "a connector read-by-id",
    OperationKind.MUTATION: "a connector mutation",
    OperationKind.DURABLE: "a connector durable operation",
}


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
        kinds = allowed_kinds(phase, policy.mutate_reads)
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
        return op is not None and op.kind in MUTATING_KINDS

    def check(self, name: str) -> OperationManifest | None:
        """The operation `name` refers to (None for a topic op), if this phase allows it.

        Raises `PhaseViolation` for an operation the phase forbids, and
        `UnknownOperation`/`UnknownConnector` for one no connector declares.
        """
        phase = self.phase.value
        if name in TOPIC_OPERATIONS:
            if name in self.topic_operations:
                return None
            allowed = where_allowed(name)
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
            f"it is allowed only in: {where_allowed(declared.kind, self.policy.mutate_reads)}",
            operation=name,
            phase=phase,
        )
