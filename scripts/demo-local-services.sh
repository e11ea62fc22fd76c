#!/usr/bin/env bash
# Start a local MCP server, HTTP API and SMTP server on 127.0.0.1, declare them in a
# keep.toml next to the demo's store, run a workflow that uses all three with `keep run`
# (incidents -> MCP tickets -> mail to on-call), print what each service received, stop
# them. Starts from a fresh demo folder every time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
demo=.keep/demo-services
rm -rf "$demo"
.venv/bin/python scripts/demo_local_services.py "$demo"
