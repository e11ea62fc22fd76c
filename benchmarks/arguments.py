"""Argument checks: ``python benchmarks/arguments.py [--quick]``.

Prints, measured in the same run, the µs per check of a typical valid argument of
``sheets.appendRow`` and ``gmail.send`` against the built-in manifest:
- jsonschema alone, as the check ran before the compiled fast path (every error of
  ``iter_errors``, sorted by path);
- the check keep runs now (`keep_sdk.sandbox._schemas.ArgumentSchema.errors`: the compiled
  fastjsonschema check, jsonschema only for a value it rejects);
- the median of the per-round ratios of the two, with min and max (rounds interleave);
and, for the cost paid once or only on a malformed call, the µs of building the checks of
one schema (fastjsonschema compiles Python code) and of checking an invalid argument.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema

sys.path.insert(0, str(Path(__file__).parents[1]))
from keep_sdk.connectors import builtin_manifest
from keep_sdk.sandbox._schemas import ArgumentSchema

CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {
    "sheets.appendRow": (
        "sheets",
        "appendRow",
        {"spreadsheetId": "s1", "values": ["2026-11-26", "order 1042", 3, 19.5, True]},
        {"spreadsheetId": "", "values": []},
    ),
    "gmail.send": (
        "gmail",
        "send",
        {"to": "ada@example.com", "subject": "Your order", "body": "It ships today.", "cc": []},
        {"to": 5, "subject": "s", "body": "b", "colour": "red"},
    ),
}


def per_call_us(check: Callable[[], object], calls: int) -> float:
    """The µs one call of `check` takes, timed over `calls` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        check()
    return (time.perf_counter() - start) / calls * 1e6


def measure(label: str, text: str, valid: Any, invalid: Any, calls: int, rounds: int) -> None:
    """Print one operation's line: rounds interleave jsonschema and the check keep runs."""
    schema = json.loads(text)
    validator = jsonschema.validators.validator_for(schema)(schema)
    checks = ArgumentSchema(text)
    assert checks.compiled is not None, f"{label} has no compiled check"
    assert checks.errors(valid) == []
    assert checks.errors(invalid) != []

    def before(value: Any) -> object:
        return sorted(validator.iter_errors(value), key=lambda e: list(e.path))

    samples: dict[str, list[float]] = {"before": [], "now": [], "ratio": []}
    for _ in range(rounds):
        reference = per_call_us(lambda: before(valid), calls)
        compiled = per_call_us(lambda: checks.errors(valid), calls)
        samples["before"].append(reference)
        samples["now"].append(compiled)
        samples["ratio"].append(reference / compiled)
    ratios = samples["ratio"]
    print(
        f"{label:<18} {statistics.median(samples['before']):>14.2f} "
        f"{statistics.median(samples['now']):>12.2f} {statistics.median(ratios):>6.1f}x "
        f"(min {min(ratios):.1f}, max {max(ratios):.1f})"
    )
    build = statistics.median(per_call_us(lambda: ArgumentSchema(text), 10) for _ in range(3))
    invalid_before = statistics.median(
        per_call_us(lambda: before(invalid), calls // 10) for _ in range(rounds)
    )
    invalid_now = statistics.median(
        per_call_us(lambda: checks.errors(invalid), calls // 10) for _ in range(rounds)
    )
    print(
        f"{'':<18} build once {build:,.0f} µs; invalid argument: jsonschema "
        f"{invalid_before:.1f} µs, now {invalid_now:.1f} µs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    options = parser.parse_args()
    calls, rounds = (1_000, 5) if options.quick else (10_000, 9)
    manifest = builtin_manifest()
    print(f"{'operation':<18} {'jsonschema µs':>14} {'compiled µs':>12} {'ratio':>7}")
    for label, (connector, name, valid, invalid) in CASES.items():
        text = json.dumps(manifest.operation(connector, name).arguments, sort_keys=True)
        measure(label, text, valid, invalid, calls, rounds)


if __name__ == "__main__":
    main()
