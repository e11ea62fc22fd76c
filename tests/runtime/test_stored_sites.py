"""Approved call sites hold for every phase the runtime runs, also for versions stored
before sites were recorded, and replay enforces them too (issue 28).

A version whose stored manifest has no call sites gets them when it is loaded (its
source validated again); one whose source no longer validates, or that a runtime
without a loader reads, never runs a phase unchecked.
"""

from __future__ import annotations

from typing import Any

from keep_sdk.connectors import ConnectorSet
from keep_sdk.contract.workflow import WorkflowManifest
from keep_sdk.model import HandlerKind, RunStatus
from keep_sdk.repair.replay import ReplayOutcome, replay_runs
from keep_sdk.runtime import Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import HandlerSpec
from keep_sdk.validator import validate
from tests.runtime.harness import MAIL_TO_SHEET, Env, fast_policy

VISIBLE_MUTATE = """        await ctx.sheets.appendRow({
          spreadsheetId: "reports",
          values: [prepared.data.from, prepared.data.subject],
        });"""
HIDDEN_MUTATE = (
    "        const o = {};\n"
    "        o['to' + 'JSON'] = () => ctx.sheets.appendRow("
    '{ spreadsheetId: "reports", values: ["hidden"] });\n'
    "        JSON.stringify(o);\n" + VISIBLE_MUTATE
)
NO_LONGER_VALID = "const __keepSecret = 1;\n" + MAIL_TO_SHEET


def _without_sites(manifest: WorkflowManifest) -> dict[str, Any]:
    """`manifest` as a version deployed before call sites were recorded stored it."""
    stored = manifest.model_dump(mode="json")
    for producer in stored["producers"]:
        producer["handler"].pop("call_sites", None)
    for consumer in stored["consumers"]:
        for phase in ("prepare", "mutate", "next"):
            consumer[phase].pop("call_sites", None)
    return stored


def deploy_as_before_sites(env: Env, source: str) -> int:
    """Store `source` the way a version deployed before call sites were recorded is stored:
    its manifest, frozen connectors included, without any call site."""
    manifest = validate(source).workflow
    assert manifest is not None
    frozen = manifest.model_copy(update={"connectors": env.runtime.connectors.manifest()})
    stored = _without_sites(frozen)
    assert "call_sites" not in str(stored)
    handlers = [HandlerSpec(name=p.name, kind=HandlerKind.PRODUCER) for p in manifest.producers]
    handlers += [
        HandlerSpec(name=c.name, kind=HandlerKind.CONSUMER, subscribe=list(c.subscribe))
        for c in manifest.consumers
    ]
    return env.store.deploy("mail-to-sheet", source, stored, handlers=handlers)


def test_an_old_version_without_sites_runs_its_ordinary_calls(env: Env) -> None:
    deploy_as_before_sites(env, MAIL_TO_SHEET)
    assert env.runtime.run_producer("mail-to-sheet", "pollEmail").status is RunStatus.COMMITTED
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert run.status is RunStatus.COMMITTED, run.error
    assert env.rows() == [["sender1@example.com", "Invoice 1"]]


def test_an_old_version_without_sites_is_still_checked_by_site(env: Env) -> None:
    source = MAIL_TO_SHEET.replace(VISIBLE_MUTATE, HIDDEN_MUTATE)
    assert source != MAIL_TO_SHEET
    today = validate(source, connectors=env.runtime.connectors.manifest())
    assert {d.rule for d in today.diagnostics} == {"implicit-code"}
    deploy_as_before_sites(env, source)
    env.runtime.run_producer("mail-to-sheet", "pollEmail")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert run.status is RunStatus.FAILED_LOGIC
    assert run.error is not None
    assert "deployed before ctx call sites were recorded, and its source no longer valid" in (
        run.error
    )
    assert env.sheets.effects() == []


def test_an_old_version_that_no_longer_validates_never_runs_a_phase(env: Env) -> None:
    deploy_as_before_sites(env, NO_LONGER_VALID)
    run = env.runtime.run_producer("mail-to-sheet", "pollEmail")
    assert run.status is RunStatus.FAILED_LOGIC
    assert run.error is not None
    assert "deployed before ctx call sites were recorded" in run.error
    assert "no longer validates" in run.error
    assert "reserved-name" in run.error
    assert env.store.list_events("mail-to-sheet") == []


def test_a_runtime_without_a_loader_never_runs_an_old_version_unchecked(env: Env) -> None:
    deploy_as_before_sites(env, MAIL_TO_SHEET)
    bare = Runtime(
        env.store,
        ConnectorSet([env.gmail, env.sheets, env.slack]),
        policy=fast_policy(),
        now=env.clock,
        deterministic=True,
        isolation=InProcessIsolation(),
    )
    run = bare.run_producer("mail-to-sheet", "pollEmail")
    assert run.status is RunStatus.FAILED_LOGIC
    assert run.error is not None
    assert "no workflow loader" in run.error
    assert env.store.list_events("mail-to-sheet") == []


def _recorded(env: Env) -> None:
    env.runtime.run_producer("mail-to-sheet", "pollEmail")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert run.status is RunStatus.COMMITTED, run.error


def _replay(env: Env, source: str, manifest: WorkflowManifest) -> dict[str, str]:
    summary = replay_runs(
        source,
        env.store,
        manifest=manifest,
        connectors=env.runtime.connectors.manifest(),
        isolation=InProcessIsolation(),
    )
    return {f"{r.handler}:{r.outcome.value}": r.error or "" for r in summary.runs}


def test_replay_refuses_a_hidden_call_in_the_new_version(env: Env) -> None:
    _recorded(env)
    source = MAIL_TO_SHEET.replace(VISIBLE_MUTATE, HIDDEN_MUTATE)
    manifest = validate(source, connectors=env.runtime.connectors.manifest()).workflow
    assert manifest is not None
    outcomes = _replay(env, source, manifest)
    assert outcomes["pollEmail:same"] == ""
    error = outcomes[f"appendRow:{ReplayOutcome.WOULD_FAIL.value}"]
    assert "not a ctx call site the validator approved" in error


def test_replay_with_a_manifest_without_sites_performs_no_ctx_call(env: Env) -> None:
    _recorded(env)
    manifest = validate(MAIL_TO_SHEET).workflow
    assert manifest is not None
    assert _replay(env, MAIL_TO_SHEET, manifest) == {"pollEmail:same": "", "appendRow:same": ""}
    bare = WorkflowManifest.model_validate(_without_sites(manifest))
    outcomes = _replay(env, MAIL_TO_SHEET, bare)
    assert set(outcomes) == {"pollEmail:would-fail", "appendRow:would-fail"}
    assert all("without the call sites" in error for error in outcomes.values())
