#!/usr/bin/env bash
# Mutation testing (mutmut 3) of the store commit points and the memory store against the
# shipped store conformance suite. Not part of CI: a full run takes far longer than 10 minutes.
#
#   scripts/mutation-test.sh                      # keep_sdk/stores/_commit/ and memory.py
#   scripts/mutation-test.sh keep_sdk/stores/_commit/_leases.py ...   # only these files
#   scripts/mutation-test.sh keep_sdk/stores/sql/_rows.py   # the SQL store: on SQLite
#
# The tests: the shipped suite against the memory and JSON-file (small-protocol) stores,
# or, when a target is under keep_sdk/stores/sql/, against the SQL store on SQLite
# (MUTATION_TESTS="file ..." chooses others).
#
# It installs its own venv (.venv-mutation, with the `mutation` extra), works in a scratch
# copy of the tracked files (MUTATION_WORKDIR, default a new temporary folder) so the work
# tree never holds mutants, and prints mutmut's results and the score (killed / all).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$root/.venv-mutation
if [ ! -x "$venv/bin/mutmut" ] || [ pyproject.toml -nt "$venv/.installed" ]; then
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[dev,mutation]'
    touch "$venv/.installed"
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(keep_sdk/stores/_commit/ keep_sdk/stores/memory.py)
fi
work=${MUTATION_WORKDIR:-$(mktemp -d -t keep-mutation-XXXXXX)}
mkdir -p "$work"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$work"
patterns=""
for target in "${targets[@]}"; do
    case $target in
        */) patterns+="\"${target}*\", " ;;
        *) patterns+="\"${target}\", " ;;
    esac
done
tests=${MUTATION_TESTS:-}
if [ -z "$tests" ]; then
    case " ${targets[*]}" in
        *" keep_sdk/stores/sql/"*) tests="tests/stores/test_conformance_sql.py" ;;
        *) tests="tests/stores/test_conformance_memory.py tests/stores/test_conformance_json_file.py" ;;
    esac
fi
selection=""
for test in $tests; do
    selection+="\"$test\", "
done
cat >> "$work/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = ["keep_sdk"]
only_mutate = [${patterns%, }]
pytest_add_cli_args_test_selection = [${selection%, }]
also_copy = ["tests", "fixtures", "pyproject.toml"]
pytest_add_cli_args = ["-q", "-x", "-p", "no:randomly", "-m", "not slow and not postgres"]
EOF
cd "$work"
echo "mutation: working in $work on ${targets[*]}" >&2
nice -n 10 "$venv/bin/mutmut" run --max-children "${MUTATION_JOBS:-2}" || true
"$venv/bin/mutmut" results --all true > results.txt || true
python3 - results.txt <<'PY'
import collections, sys
counts = collections.Counter()
for line in open(sys.argv[1]):
    name, _, status = line.strip().rpartition(": ")
    if name:
        counts[status] += 1
total = sum(counts.values())
killed = counts.get("killed", 0) + counts.get("timeout", 0)
print(dict(counts))
print(f"mutation score: {killed}/{total} killed ({100 * killed / max(total, 1):.1f}%)")
PY
grep -v ": killed$" results.txt | grep -v ": timeout$" || true
