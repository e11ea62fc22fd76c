"""The keep-sdk pytest plugin (entry point ``pytest11``): options and the store certificate.

``--keep-store-url URL`` names the store `keep_sdk.conformance.stores.at_url`
checks and ``--keep-thorough`` gives its bounded-peek test the large backlog;
``keep conformance --store URL`` passes them. After a session that ran tests of
the store suite (``StoreConformance`` subclasses), the terminal summary holds a
"keep store certificate" section (`keep_sdk.conformance.certificate`);
``--keep-certificate PATH`` also writes its outcomes as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from keep_sdk.conformance.certificate import TestOutcome

__all__ = [
    "CAPABILITY_PROPERTY",
    "CERTIFICATE_OPTION",
    "DECLARES_PROPERTY",
    "STORE_URL_OPTION",
    "SUITE_PROPERTY",
    "THOROUGH_OPTION",
    "pytest_addoption",
    "pytest_configure",
]

STORE_URL_OPTION = "--keep-store-url"
THOROUGH_OPTION = "--keep-thorough"
CERTIFICATE_OPTION = "--keep-certificate"

SUITE_PROPERTY = "keep_store_suite"
"""User property every store-suite test carries: the name of its test class."""

DECLARES_PROPERTY = "keep_declares"
"""User property recorded after each store-suite test: the capabilities its class
declares, comma-separated."""

CAPABILITY_PROPERTY = "keep_capability"
"""User property of a test that needs a capability: ``<capability>=declared`` or
``<capability>=not declared``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("keep_sdk", "keep-sdk conformance suites")
    group.addoption(
        STORE_URL_OPTION,
        action="store",
        default=None,
        metavar="URL",
        help="store URL (memory://, sqlite:///path, postgresql://..., a plugin's scheme) "
        "the store suite checks",
    )
    group.addoption(
        THOROUGH_OPTION,
        action="store_true",
        default=False,
        help="load the large backlog (100,000 events) in the store suite's bounded-peek test",
    )
    group.addoption(
        CERTIFICATE_OPTION,
        action="store",
        default=None,
        metavar="PATH",
        help="write the store suite's test outcomes and capabilities to PATH as JSON",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_Certifier(config), "keep-store-certificate")


class _Certifier:
    """Collects each store-suite test's outcome and needed capabilities."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.outcomes: dict[str, str] = {}
        self.needs: dict[str, dict[str, bool]] = {}
        self.declared: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if report.when == "teardown" and SUITE_PROPERTY in properties:
            needs = self.needs.setdefault(report.nodeid, {})
            for name, value in report.user_properties:
                if name == CAPABILITY_PROPERTY:
                    capability, _, state = str(value).partition("=")
                    needs[capability] = needs.get(capability, False) or state == "declared"
                elif name == DECLARES_PROPERTY:
                    self.declared.update(c for c in str(value).split(",") if c)
        if hasattr(report, "wasxfail"):
            return
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped and report.when in ("setup", "call"):
            self.outcomes.setdefault(report.nodeid, "skipped")
        elif report.passed and report.when == "call":
            self.outcomes.setdefault(report.nodeid, "passed")

    def tests(self) -> list[TestOutcome]:
        from keep_sdk.conformance.certificate import TestOutcome

        return [
            TestOutcome(name=nodeid, outcome=self.outcomes.get(nodeid, "failed"), needs=needs)
            for nodeid, needs in self.needs.items()
        ]

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        from keep_sdk.conformance.certificate import CapabilityStatus, certify
        from keep_sdk.stores import StoreCapability

        tests = self.tests()
        if not tests:
            return
        store = self.config.getoption(STORE_URL_OPTION) or "the StoreConformance subclasses"
        declared = self.declared | {c for t in tests for c, yes in t.needs.items() if yes}
        certificate = certify(str(store), tests, declared=[StoreCapability(c) for c in declared])
        terminalreporter.section("keep store certificate")
        for row in certificate.capabilities:
            counts = f"{row.passed} passed, {row.failed} failed, {row.skipped} skipped"
            status = row.status.value.upper()
            red = row.status is CapabilityStatus.FAILED
            terminalreporter.write_line(f"{row.capability:<18} {status:<13} {counts}", red=red)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        target = self.config.getoption(CERTIFICATE_OPTION)
        if target:
            Path(target).write_text(
                json.dumps([t.model_dump() for t in self.tests()]), encoding="utf-8"
            )
