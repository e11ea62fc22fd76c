"""Run the shipped store suite against a store URL in a pytest subprocess and certify it.

``keep conformance --store URL`` prints the `SuiteReport` (its `Certificate` first);
a store author's CI can call `run_store_suite` directly.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Collection
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from keep_sdk.conformance._support import open_url
from keep_sdk.conformance.certificate import Certificate, TestOutcome, certify
from keep_sdk.errors import ConfigurationError
from keep_sdk.stores import StoreCapability, declared_capabilities

__all__ = ["AreaSummary", "SuiteReport", "run_store_suite"]

SUITE = "keep_sdk.conformance.stores.at_url"


class AreaSummary(BaseModel):
    """Outcomes of the tests of one suite area (one mixin)."""

    model_config = ConfigDict(frozen=True)

    area: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0


class SuiteReport(BaseModel):
    """What a run of the store suite found."""

    model_config = ConfigDict(frozen=True)

    store: str
    certificate: Certificate
    areas: list[AreaSummary]
    failures: dict[str, str]
    exit_code: int

    @property
    def ok(self) -> bool:
        """The suite ran, no test failed, and the certificate holds (every required
        capability passed)."""
        return self.exit_code == 0 and not self.failures and self.certificate.ok


def _without_password(url: str) -> str:
    return re.sub(r"://([^:/@]+):[^@/]*@", r"://\1:***@", url)


def _areas() -> dict[str, str]:
    from keep_sdk.conformance.stores import StoreConformance

    found: dict[str, str] = {}
    for cls in reversed(StoreConformance.__mro__):
        for name in vars(cls):
            if name.startswith("test_"):
                found[name] = cls.__name__.removesuffix("Tests")
    return found


def _declared(store_url: str) -> frozenset[StoreCapability]:
    store = open_url(store_url)
    try:
        return declared_capabilities(store)
    finally:
        store.close()


def run_store_suite(
    store_url: str,
    *,
    selection: str | None = None,
    required: Collection[StoreCapability] = (),
    thorough: bool = False,
) -> SuiteReport:
    """Run the store suite against `store_url` in a pytest subprocess and certify it.

    The tests of every capability the store declares run; `required` capabilities
    must pass (one the store does not declare fails the certificate). `selection` is
    a pytest ``-k`` expression; `thorough` loads the large backlogs. Raises
    `ConfigurationError` when pytest is not installed or did not run the suite at all.
    """
    if importlib.util.find_spec("pytest") is None:
        raise ConfigurationError(
            "the conformance suite runs on pytest, which is not installed; "
            "install it (pip install 'keep-sdk[conformance]') and run the command again"
        )
    declared = _declared(store_url)
    areas = _areas()
    counts: dict[str, Counter[str]] = {}
    failures: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="keep-conformance-") as workdir:
        ini = Path(workdir, "pytest.ini")
        ini.write_text("[pytest]\n")
        report = Path(workdir, "report.xml")
        outcomes = Path(workdir, "certificate.json")
        command = [
            sys.executable, "-m", "pytest", "--pyargs", SUITE,
            "-c", str(ini), "--rootdir", workdir, "-p", "no:cacheprovider", "-q",
            "--keep-store-url", store_url, f"--junitxml={report}",
            "--keep-certificate", str(outcomes),
        ]  # fmt: skip
        if selection:
            command += ["-k", selection]
        if thorough:
            command.append("--keep-thorough")
        done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, check=False)
        if not report.exists():
            raise ConfigurationError(
                f"pytest did not run the suite (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        for case in ET.parse(report).getroot().iter("testcase"):
            name = case.get("name", "?").split("[", 1)[0]
            area = areas.get(name, "Other")
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed"
                    failures[name] = (child.get("message") or child.text or "").strip()[:500]
                elif child.tag == "skipped":
                    outcome = "skipped"
            counts.setdefault(area, Counter())[outcome] += 1
        written = json.loads(outcomes.read_text()) if outcomes.exists() else []
        tests = [TestOutcome.model_validate(t) for t in written]
    summaries = [
        AreaSummary(area=area, passed=c["passed"], failed=c["failed"], skipped=c["skipped"])
        for area, c in sorted(counts.items())
    ]
    store = _without_password(store_url)
    return SuiteReport(
        store=store,
        certificate=certify(store, tests, declared=declared, required=required),
        areas=summaries,
        failures=failures,
        exit_code=done.returncode,
    )
