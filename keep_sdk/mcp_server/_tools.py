"""What each tool does, over a `Workspace`: plain functions from arguments to answers."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from keep_sdk.app import Installation
from keep_sdk.errors import ConfigurationError, ScriptRejected
from keep_sdk.mcp_server._outputs import CaseRun, ConnectorListing, DeployOutcome
from keep_sdk.mcp_server._workspace import Workspace
from keep_sdk.model import HostPolicy
from keep_sdk.repair import ReplaySummary, replay_runs, run_case_file
from keep_sdk.repair.surface import SurfaceDiff, diff_surfaces, surface_of
from keep_sdk.runtime import CheckedScript
from keep_sdk.status import StatusReport
from keep_sdk.validator import ReportSet

__all__ = ["connectors", "deploy", "diff", "replay", "run_cases", "status", "validate"]


def _read(path: str, what: str = "script") -> str:
    file = Path(path)
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"there is no {what} at {path}; give an existing path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read the {what} {path}: {exc}") from None


def validate(workspace: Workspace, paths: list[str], mutate_reads: str) -> ReportSet:
    """The validator's JSON report of each script (``keep validate --format json``)."""
    policy = HostPolicy.model_validate({"mutate_reads": mutate_reads})
    manifest = workspace.manifest()
    return ReportSet.of(
        [
            workspace.plugins.validate(
                _read(path), policy=policy, filename=path, connectors=manifest
            )
            for path in paths
        ]
    )


def connectors(workspace: Workspace, name: str | None) -> ConnectorListing:
    """The connectors (or the one called `name`) with their operations' argument schemas."""
    manifest = workspace.manifest()
    chosen = [manifest.connector(name)] if name else manifest.connectors
    return ConnectorListing(connectors=chosen)


def run_cases(
    workspace: Workspace, case_file: str, cases: list[str], script: str | None
) -> CaseRun:
    """Run the cases of `case_file` (``keep test``), against `script` instead of the script
    the file names when given (a repaired version)."""
    if not Path(case_file).is_file():
        raise ConfigurationError(f"there is no case file at {case_file}; give a *.keep.yaml")
    source = _read(script) if script else None
    results = run_case_file(
        Path(case_file),
        cases,
        source=source,
        filename=script,
        plugins=workspace.plugins,
        config=workspace.config(),
    )
    failed = [r for r in results if not r.ok]
    return CaseRun(
        file=case_file,
        ok=not failed,
        passed=len(results) - len(failed),
        failed=len(failed),
        results=results,
        report="\n".join(f"{r.name}:\n{r.report()}" for r in failed),
    )


def _checked(inst: Installation, source: str, filename: str, name: str | None) -> CheckedScript:
    """`source` validated once in `inst`'s world, with the policy of its workflow."""
    load = inst.runtime.load_workflow
    assert load is not None
    connectors = inst.connectors.manifest()
    workflow = load(source, connectors=connectors, policy=inst.runtime.policy, filename=filename)
    policy = inst.runtime.policy_for(name or workflow.manifest.name or "")
    if policy != inst.runtime.policy:
        workflow = load(source, connectors=connectors, policy=policy, filename=filename)
    return CheckedScript(source, filename, workflow, connectors, policy)


def replay(
    workspace: Workspace,
    script: str,
    workflow: str | None,
    since: dt.datetime | None,
    limit: int | None,
) -> ReplaySummary:
    """`script` against the recorded runs of the store (``keep replay``); read only."""
    source = _read(script)
    with workspace.opened(read_only=True, isolation="process") as inst:
        checked = _checked(inst, source, script, workflow)
        return replay_runs(
            source,
            inst.store,
            manifest=checked.workflow.manifest,
            connectors=checked.connectors,
            workflow=workflow,
            since=since,
            limit=limit,
            policy=checked.policy,
            isolation=inst.runtime.isolation,
        )


def diff(workspace: Workspace, old: str, new: str) -> SurfaceDiff:
    """How `new` differs from `old` in what it may do, and the permissions it newly needs."""
    manifest = workspace.manifest()
    before, after = (
        surface_of(_read(path), connectors=manifest, filename=path) for path in (old, new)
    )
    return diff_surfaces(before, after)


def deploy(workspace: Workspace, script: str, name: str | None) -> DeployOutcome:
    """Validate `script` once and deploy it (a new version when it changed), as
    ``keep deploy`` does without ``--grant``: this never grants a permission."""
    if not workspace.allow_deploy:
        raise ConfigurationError(
            "deploying is turned off for this server; start it with `keep mcp --allow-deploy`"
        )
    source = _read(script)
    with workspace.opened(read_only=False) as inst:
        checked = _checked(inst, source, script, name)
        workflow = name or checked.workflow.manifest.name
        if not workflow:
            raise ScriptRejected(
                f'{script} declares no name; add name: "..." to Keep.workflow({{...}})'
            )
        version, deployed = inst.runtime.deploy_if_changed(
            source, name=workflow, filename=script, checked=checked
        )
        held = sorted(inst.store.get_workflow(workflow).grants)
        needed = surface_of(
            source, connectors=checked.connectors, policy=checked.policy, filename=script
        ).permissions
        return DeployOutcome(
            workflow=workflow,
            version=version,
            deployed=deployed,
            store=inst.store_url,
            grants=held,
            needed=needed,
            missing=[p for p in needed if p not in held],
        )


def status(workspace: Workspace, workflow: str | None, limit: int) -> StatusReport:
    """What came in, went out and waits (``keep status``)."""
    with workspace.opened(read_only=True) as inst:
        return inst.status(workflow=workflow, limit=limit)
