#!/usr/bin/env bash
# Set up .venv and run the demo: list what workflow scripts can call.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== connectors a workflow script can call (keep connectors) =="
.venv/bin/keep connectors
