#!/usr/bin/env bash
# Set up .venv and run the demo workflow (invoices by mail -> a spreadsheet row each ->
# a summary posted to #finance) on the embedded SQLite store, with the built-in
# connectors seeded with sample data. Starts from a fresh demo store every time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
demo=.keep/demo
store="sqlite:///$demo/keep.db"
rm -rf "$demo"
echo "== 1. the workflow is checked before it runs (keep validate) =="
.venv/bin/keep validate fixtures/workflows/demo/invoices.js
echo
echo "== 2. deploy and run it until nothing is due (keep run --until-idle) =="
.venv/bin/keep run fixtures/workflows/demo/invoices.js --store "$store" \
    --seed fixtures/workflows/demo/sample-data.json \
    --grant gmail.read --grant sheets.write --grant slack.write --until-idle
echo
echo "== 3. what the connectors now hold =="
.venv/bin/python - "$demo/doubles.db" <<'PY'
import sys
from keep_sdk.connectors.builtin import Sheets, Slack
sheet = Sheets(backing=sys.argv[1]).snapshot()["spreadsheets"]["invoices"]["rows"]
print("invoices sheet:")
for row in sheet:
    print("  ", " | ".join(str(v) for v in row["values"]))
for message in Slack(backing=sys.argv[1]).snapshot()["channels"]["#finance"]:
    print("#finance:", message["text"].replace("\n", "\n          "))
PY
echo
echo "Look around:  .venv/bin/keep status --store $store"
echo "              .venv/bin/keep runs --store $store     (also: events, ledger, --json)"
echo "Run it once more: .venv/bin/keep run fixtures/workflows/demo/invoices.js --store $store --until-idle"
echo "              (no new mail, so nothing is added twice)"
