"""A third party certifies a store by subclassing the shipped suite in its own tests."""

from __future__ import annotations

import pytest

THIRD_PARTY = """
import pytest
from keep_sdk.conformance import StoreConformance
from keep_sdk.stores import MemoryStore


class TestTheirStore(StoreConformance):
    supports_fault_injection = True

    @pytest.fixture
    def store(self, clock):
        store = MemoryStore(clock=clock)
        yield store
        store.close()
"""


def test_a_subclass_with_one_fixture_runs_the_suite(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_theirs=THIRD_PARTY)
    result = pytester.inline_run("-p", "no:cacheprovider", "-k", "publish or lease")
    passed, skipped, failed = result.listoutcomes()
    assert failed == []
    assert len(passed) >= 12
    assert all("supports_processes" in str(r.longrepr) for r in skipped)


def test_forgetting_the_store_fixture_says_what_to_do(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_forgot="from keep_sdk.conformance import StoreConformance\n\n"
        "class TestForgot(StoreConformance):\n    pass\n"
    )
    result = pytester.inline_run("-p", "no:cacheprovider", "-k", "creates_a_pending_event")
    _, _, failed = result.listoutcomes()
    assert len(failed) == 1
    assert "override the `store` fixture" in str(failed[0].longrepr)


def test_the_plugin_adds_the_store_url_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--keep-store-url=URL*"])


def test_the_suite_runs_against_a_url_given_on_the_command_line(
    pytester: pytest.Pytester,
) -> None:
    args = (
        "--pyargs", "keep_sdk.conformance.stores.at_url", "--keep-store-url", "memory://",
        "-k", "lease", "-p", "no:cacheprovider",
    )  # fmt: skip
    collected = pytester.runpytest("--collect-only", "-q", *args).parseoutcomes()
    selected = collected["tests"] - collected.get("deselected", 0)
    outcomes = pytester.runpytest(*args).parseoutcomes()
    assert outcomes.get("failed", 0) == 0
    assert selected >= 8
    assert outcomes["passed"] + outcomes["skipped"] == selected
    assert outcomes["skipped"] == 1


def test_the_summary_certifies_the_capabilities_a_subclass_declares(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_theirs=THIRD_PARTY)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-k", "heartbeat or event_pages or all_or_nothing"
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*keep store certificate*",
            "core * PASSED *",
            "durable * NOT DECLARED *",
            "pages * PASSED *",
            "counts * NOT RUN *",
            "fault-injection * PASSED *",
        ]
    )


def test_the_summary_shows_a_declared_capability_that_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_theirs=THIRD_PARTY.replace("MemoryStore(clock=clock)", "Pageless(clock=clock)")
        + "\n\nclass Pageless(MemoryStore):\n"
        "    def page_events(self, workflow, **kwargs):\n        return []\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "event_pages")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*keep store certificate*", "pages * FAILED * 0 passed, * failed*"]
    )
