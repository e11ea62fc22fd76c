"""Run one scenario file and print its report: python -m tests.scenarios.run_one FILE."""

import sys
from pathlib import Path

from keep_sdk.conformance.scenarios import load_scenario, run_scenario

if __name__ == "__main__":
    for name in [a for a in sys.argv[1:] if a != "-v"]:
        result = run_scenario(load_scenario(Path(name)))
        print(("ok  " if result.ok else "FAIL") + f" {name}")
        if not result.ok or "-v" in sys.argv:
            print(result.report())
