"""The concept pages cannot drift from the code: every failure kind with its route, every
test a guarantee names exists."""

from __future__ import annotations

import re
from pathlib import Path

from keep_sdk.model import FailureKind
from keep_sdk.runtime import route

ROOT = Path(__file__).parents[2]
CONCEPTS = ROOT / "docs" / "concepts"


def test_every_failure_kind_is_on_the_page_with_the_status_it_routes_to() -> None:
    rows = {
        line.split("|")[1].strip().strip("`"): line
        for line in (CONCEPTS / "failures.md").read_text().splitlines()
        if line.startswith("| `")
    }
    assert set(rows) == {kind.value for kind in FailureKind}
    for kind in FailureKind:
        status = route(kind, mutation_may_have_happened=False).status
        assert f"`{status.value}`" in rows[kind.value], kind


def test_every_guarantee_names_files_that_exist() -> None:
    text = (CONCEPTS / "guarantees.md").read_text()
    named = set(re.findall(r"`((?:tests|keep_sdk|docs)/[\w/.]+\.(?:py|md))`", text))
    assert len(named) >= 10
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert not missing, missing
