#!/usr/bin/env bash
# Set up .venv and run the whole test suite, tests marked `slow` included (CI
# runs this). PostgreSQL tests start their own throwaway server (the PostgreSQL
# binaries must be installed; see README). Arguments go to pytest: the fast
# subset is `bash scripts/test.sh -m "not slow"`. The 25 slowest tests are listed at
# the end, so a CI log shows where the suite's time goes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest --durations=25 "$@"
