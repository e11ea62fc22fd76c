"""The certificate: each capability passed, failed, not declared or not run, from outcomes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.conformance.certificate import CORE, CapabilityStatus, TestOutcome, certify
from keep_sdk.errors import ConfigurationError
from keep_sdk.stores import MemoryStore, StoreCapability, declared_capabilities

CAPABILITIES = list(StoreCapability)

outcomes = st.lists(
    st.builds(
        TestOutcome,
        name=st.text(min_size=1, max_size=5),
        outcome=st.sampled_from(["passed", "failed", "skipped"]),
        needs=st.dictionaries(st.sampled_from([c.value for c in CAPABILITIES]), st.booleans()),
    ),
    max_size=12,
)
capability_sets = st.frozensets(st.sampled_from(CAPABILITIES))


@settings(max_examples=40, deadline=None)
@given(outcomes, capability_sets, capability_sets)
def test_a_certificate_holds_exactly_when_nothing_failed_and_every_required_capability_passed(
    tests: list[TestOutcome],
    declared: frozenset[StoreCapability],
    required: frozenset[StoreCapability],
) -> None:
    certificate = certify("x://", tests, declared=declared, required=required)
    rows = {row.capability: row for row in certificate.capabilities}
    assert list(rows) == [CORE, *(c.value for c in CAPABILITIES)]
    for test in tests:
        for name in test.needs or [CORE]:
            if test.outcome == "failed":
                assert rows[name].status is CapabilityStatus.FAILED
    for capability in CAPABILITIES:
        row = rows[capability.value]
        counted = [t for t in tests if capability.value in t.needs]
        assert (row.passed, row.failed, row.skipped) == tuple(
            sum(t.outcome == o for t in counted) for o in ("passed", "failed", "skipped")
        )
        if row.status is not CapabilityStatus.FAILED:
            assert (row.status is CapabilityStatus.NOT_DECLARED) == (capability not in declared)
    expected = not any(t.outcome == "failed" for t in tests) and all(
        rows[c.value].status is CapabilityStatus.PASSED for c in required
    )
    assert certificate.ok == expected
    assert (certificate.problems == []) == expected


def test_declared_capabilities_are_inferred_from_the_tests_that_saw_them_declared() -> None:
    tests = [
        TestOutcome(name="a", outcome="passed", needs={"durable": True}),
        TestOutcome(name="b", outcome="skipped", needs={"processes": False}),
        TestOutcome(name="c", outcome="passed"),
    ]
    rows = {r.capability: r.status for r in certify("x://", tests).capabilities}
    assert rows[CORE] is CapabilityStatus.PASSED
    assert rows["durable"] is CapabilityStatus.PASSED
    assert rows["processes"] is CapabilityStatus.NOT_DECLARED


def test_a_required_capability_that_is_declared_but_not_run_fails_the_certificate() -> None:
    tests = [TestOutcome(name="c", outcome="passed")]
    certificate = certify(
        "x://", tests, declared=[StoreCapability.PAGES], required=[StoreCapability.PAGES]
    )
    assert not certificate.ok
    assert certificate.problems == ["pages: required, but not run"]


def test_the_memory_store_declares_what_needs_no_other_process_or_reopen() -> None:
    assert declared_capabilities(MemoryStore()) == frozenset(StoreCapability) - {
        StoreCapability.PROCESSES,
        StoreCapability.REOPEN,
    }


def test_a_store_declaring_an_unknown_capability_is_told_the_known_ones() -> None:
    class Odd(MemoryStore):
        capabilities = frozenset({"teleport"})  # type: ignore[assignment]

    with pytest.raises(ConfigurationError, match="'teleport', which is not a store capability"):
        declared_capabilities(Odd())
