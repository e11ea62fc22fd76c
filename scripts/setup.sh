#!/usr/bin/env bash
# Create .venv (if missing) and install keep-sdk with its dev extra into it. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($python --version)" >&2
    "$python" -m venv .venv
fi
stamp=.venv/.keep-sdk-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "setup: installing keep-sdk[dev] into .venv" >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
    touch "$stamp"
fi
