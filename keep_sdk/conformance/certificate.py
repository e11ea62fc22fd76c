"""The certificate of a store-suite run: each capability passed, failed or not declared.

Every test of the store suite counts under ``core`` (what every store must do) or
under each `StoreCapability` it needs (a test of durable fault injection counts
under both). `certify` turns the outcomes into a `Certificate`; ``keep
conformance`` prints it, and the pytest plugin prints it after a run of
`StoreConformance` subclasses.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from keep_sdk.stores import StoreCapability

__all__ = [
    "CORE",
    "CapabilityResult",
    "CapabilityStatus",
    "Certificate",
    "TestOutcome",
    "certify",
]

CORE = "core"
"""The row of the tests every store must pass (they need no capability)."""


class CapabilityStatus(StrEnum):
    """What the run shows about one capability."""

    PASSED = "passed"
    """Declared, and every test that ran passed (at least one ran)."""

    FAILED = "failed"
    """A test of the capability failed."""

    NOT_DECLARED = "not declared"
    """The store does not declare it; its tests were skipped."""

    NOT_RUN = "not run"
    """Declared, but no test of it ran (a selection left them out, or all skipped)."""


class TestOutcome(BaseModel):
    """One test of the suite: its outcome and the capabilities it needs (and whether
    each was declared)."""

    __test__ = False
    model_config = ConfigDict(frozen=True)

    name: str
    outcome: str
    """``passed``, ``failed`` or ``skipped``."""
    needs: dict[str, bool] = {}
    """Capability → declared, for each capability the test needs."""


class CapabilityResult(BaseModel):
    """One row of the certificate."""

    model_config = ConfigDict(frozen=True)

    capability: str
    status: CapabilityStatus
    declared: bool
    required: bool = False
    passed: int = 0
    failed: int = 0
    skipped: int = 0

    @property
    def ok(self) -> bool:
        """False when the capability failed, or is required and did not pass."""
        if self.status is CapabilityStatus.FAILED:
            return False
        return not self.required or self.status is CapabilityStatus.PASSED


class Certificate(BaseModel):
    """What a run of the store suite certifies, capability by capability."""

    model_config = ConfigDict(frozen=True)

    store: str
    capabilities: list[CapabilityResult]

    @property
    def ok(self) -> bool:
        """Every row is ok: no declared capability failed and every required one passed."""
        return all(row.ok for row in self.capabilities)

    @property
    def problems(self) -> list[str]:
        """One sentence per row that is not ok."""
        found = []
        for row in self.capabilities:
            if row.status is CapabilityStatus.FAILED:
                found.append(f"{row.capability}: {row.failed} test(s) failed")
            elif not row.ok:
                found.append(f"{row.capability}: required, but {row.status.value}")
        return found


def certify(
    store: str,
    outcomes: Iterable[TestOutcome],
    *,
    declared: Collection[StoreCapability] | None = None,
    required: Collection[StoreCapability] = (),
) -> Certificate:
    """The certificate of these test outcomes.

    `declared` is what the store declares; None infers it from the outcomes (a
    capability is declared when a test that needs it saw it declared). `required`
    capabilities must pass: one not declared or not run makes the certificate fail.
    """
    tally: dict[str, dict[str, int]] = {}
    seen_declared: set[str] = set()
    for test in outcomes:
        names = list(test.needs) or [CORE]
        seen_declared.update(name for name, yes in test.needs.items() if yes)
        for name in names:
            counts = tally.setdefault(name, {"passed": 0, "failed": 0, "skipped": 0})
            counts[test.outcome if test.outcome in counts else "failed"] += 1
    declared_names = (
        seen_declared if declared is None else {StoreCapability(c).value for c in declared}
    )
    required_names = {StoreCapability(c).value for c in required}
    rows = [_row(CORE, tally.get(CORE, {}), declared=True, required=False)]
    rows += [
        _row(
            capability.value,
            tally.get(capability.value, {}),
            declared=capability.value in declared_names,
            required=capability.value in required_names,
        )
        for capability in StoreCapability
    ]
    return Certificate(store=store, capabilities=rows)


def _row(
    name: str, counts: Mapping[str, int], *, declared: bool, required: bool
) -> CapabilityResult:
    passed, failed = counts.get("passed", 0), counts.get("failed", 0)
    if failed:
        status = CapabilityStatus.FAILED
    elif not declared:
        status = CapabilityStatus.NOT_DECLARED
    elif passed:
        status = CapabilityStatus.PASSED
    else:
        status = CapabilityStatus.NOT_RUN
    return CapabilityResult(
        capability=name,
        status=status,
        declared=declared,
        required=required,
        passed=passed,
        failed=failed,
        skipped=counts.get("skipped", 0),
    )
