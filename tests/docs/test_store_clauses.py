"""docs/stores.md names, for each clause of the store contract, the tests that hold it:
every test it names exists, in the module it names."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "stores.md"
SUITE = ROOT / "keep_sdk" / "conformance" / "stores"
HEADER = "| clause | held by |"
REFERENCE = re.compile(r"`([^`]+)`")
DEFINED = re.compile(r"^\s*def (test_\w+)\(", re.MULTILINE)


def _clause_rows() -> list[str]:
    lines = DOC.read_text().splitlines()
    start = lines.index(HEADER) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def _module(path: str) -> Path:
    if path.startswith("tests/"):
        return ROOT / path
    return SUITE / f"_{path}"


def _named_tests(row: str) -> list[tuple[str, str]]:
    """(module path as written, test name or pattern) for each test the row's last cell
    names; the name is empty where the cell names a whole test module."""
    held_by = row.rstrip(" |").rpartition(" | ")[2]
    named, module = [], None
    for reference in REFERENCE.findall(held_by):
        path, _, name = reference.rpartition("::")
        if path:
            module = path.split("::")[0]
        elif name.endswith(".py"):
            module, name = name, ""
        if module is None or not (name == "" or name.startswith("…") or "test_" in name):
            continue
        named.append((module, name))
    return named


def test_the_clause_table_is_there() -> None:
    rows = _clause_rows()
    assert len(rows) >= 60, f"docs/stores.md's clause table has {len(rows)} rows"


def test_every_test_the_clause_table_names_exists() -> None:
    missing = []
    checked = 0
    for row in _clause_rows():
        for module, name in _named_tests(row):
            source = _module(module)
            if not source.exists():
                missing.append(f"{module} (no such module) for {name}")
                continue
            if name == "":
                checked += 1
                continue
            pattern = re.escape(name).replace("…", ".*").replace(r"\*", ".*")
            defined = DEFINED.findall(source.read_text())
            if not any(re.fullmatch(pattern, test) for test in defined):
                missing.append(f"{module}::{name}")
            checked += 1
    assert checked >= 100, f"only {checked} test names were found in the clause table"
    assert missing == [], "docs/stores.md names tests that do not exist:\n" + "\n".join(missing)


def test_the_broken_store_table_lists_every_broken_store_and_the_counts_are_true() -> None:
    from tests.conformance import broken_stores, capability_bugs
    from tests.conformance.test_capability_bugs import CASES as CAPABILITY_CASES
    from tests.conformance.test_suite_has_teeth import CASES as TEETH_CASES

    text = DOC.read_text()
    table = text[text.index("| Capability | Broken stores |") :].split("\n\n")[0]
    listed = set(re.findall(r"`(\w+Store)`", table))
    assert listed == set(CAPABILITY_CASES) | set(TEETH_CASES)
    defined = {
        name
        for module in (broken_stores, capability_bugs)
        for name in vars(module)
        if name.endswith("Store") and not name.startswith("_") and name in listed
    }
    assert defined == listed
    counts = f"`tests/conformance/broken_stores.py`, {len(TEETH_CASES)}, and\n"
    counts += f"`tests/conformance/capability_bugs.py`, {len(CAPABILITY_CASES)})"
    assert counts in text
    assert len(listed) >= 30
