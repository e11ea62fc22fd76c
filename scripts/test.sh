#!/usr/bin/env bash
# Set up .venv and run the whole test suite. PostgreSQL tests start their own
# throwaway server (the PostgreSQL binaries must be installed; see README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
