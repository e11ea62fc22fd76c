"""keep runs RUN --trace: a run's calls phase by phase, for people and (--json) machines."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.cli import cli
from keep_sdk.model import (
    FailureKind,
    HandlerKind,
    MutationApplied,
    MutationNone,
    MutationSkipped,
    RunRecord,
    RunStatus,
    TraceCall,
)
from keep_sdk.runtime import call_outcome

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo" / "invoices.js"
SAMPLE = ROOT / "fixtures" / "workflows" / "demo" / "sample-data.json"
GRANTS = ("--grant", "gmail.read", "--grant", "sheets.write", "--grant", "slack.write")


def keep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _demo(tmp_path: Path) -> str:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    code, _, err = keep("run", str(DEMO), "--store", store, "--seed", str(SAMPLE), *GRANTS,
                        "--until-idle")  # fmt: skip
    assert code == 0, err
    return store


def test_the_trace_of_a_run_shows_each_phase_with_arguments_and_results(tmp_path: Path) -> None:
    store = _demo(tmp_path)
    code, out, _ = keep("runs", "--store", store, "--json")
    runs = json.loads(out)
    assert all("trace" not in r for r in runs)
    add_row = next(r for r in runs if r["handler"] == "addRow" and r["prepareResult"]["ui"])
    code, out, _ = keep("runs", add_row["id"], "--store", store, "--trace")
    assert code == 0
    assert "prepare: 1 call" in out
    assert "mutate: 1 call" in out
    assert "next: 1 call" in out
    assert "applied  sheets.appendRow" in out
    assert "requested" not in out
    assert '"rowNumber":1' in out or '"rowNumber":' in out
    code, out, _ = keep("runs", add_row["id"], "--store", store, "--trace", "--json")
    [run] = json.loads(out)
    phases = [(p["phase"], [c["operation"] for c in p["calls"]]) for p in run["trace"]]
    assert phases == [
        ("prepare", ["peek"]),
        ("mutate", ["sheets.appendRow"]),
        ("next", ["publish"]),
    ]
    mutation = run["trace"][1]["calls"][0]
    assert mutation["status"] == "requested"
    assert set(mutation) >= {"operation", "arguments", "result", "error", "failure", "durationS"}
    assert mutation["result"]["rowNumber"] >= 1


def test_an_unknown_run_is_one_clear_message(tmp_path: Path) -> None:
    store = _demo(tmp_path)
    code, out, err = keep("runs", "run_nope", "--store", store, "--trace")
    assert code == 1
    assert "no run with id 'run_nope'" in err
    assert "Traceback" not in err + out


def test_an_uncertain_mutation_shows_uncertain_and_why(tmp_path: Path) -> None:
    from tests.cli.test_resolving import escalate

    store = f"sqlite:///{tmp_path / 'keep.db'}"
    run_id = escalate(tmp_path, store)
    code, out, _ = keep("runs", run_id, "--store", store, "--trace", "--json")
    [run] = json.loads(out)
    assert run["error"]
    code, out, _ = keep("runs", run_id, "--store", store, "--trace")
    assert code == 0
    assert "uncertain  slack.postMessage" in out
    assert "requested" not in out
    assert f"why    {run['error']}" in out


_RESULTS = st.sampled_from(
    [None, MutationApplied(result={"id": 1}), MutationNone(), MutationSkipped()]
)


@settings(max_examples=80, deadline=None)
@given(
    status=st.sampled_from(list(RunStatus)),
    failure=st.none() | st.sampled_from(list(FailureKind)),
    result=_RESULTS,
    error=st.none() | st.sampled_from(["timed out after sending", "resolved by root: skip"]),
    call_failure=st.none() | st.sampled_from(list(FailureKind)),
)
def test_a_settled_mutation_never_reads_requested(
    status: RunStatus,
    failure: FailureKind | None,
    result: MutationApplied | MutationNone | MutationSkipped | None,
    error: str | None,
    call_failure: FailureKind | None,
) -> None:
    now = dt.datetime.now(dt.UTC)
    run = RunRecord(
        id="run_" + "0" * 32, workflow="w", workflow_version=1, handler="h",
        kind=HandlerKind.CONSUMER, status=status, failure=failure, error=error,
        mutation_result=result, created_at=now, updated_at=now,
    )  # fmt: skip
    call = TraceCall(
        operation="sheets.appendRow",
        status="requested",
        error=None if call_failure is None else "it failed",
        failure=call_failure,
    )
    shown = call_outcome(call, run)
    if isinstance(result, MutationApplied):
        assert shown == "applied"
    elif isinstance(result, MutationSkipped):
        assert shown == "skipped"
    elif status is RunStatus.PAUSED_RECONCILIATION or FailureKind.INDETERMINATE in (
        failure,
        call_failure,
    ):
        assert shown in ("uncertain", "resolved")
    if failure is not None or call_failure is not None:
        assert shown != "requested"
    for other in ("ok", "failed", "refused", "dropped"):
        assert call_outcome(call.model_copy(update={"status": other}), run) == other
