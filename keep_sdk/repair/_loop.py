"""The repair loop as a library: `check` a script, `repair` it with a fixer until clean.

`check` combines what can be known about a new version before it is deployed
into one `Verdict`: the validator's report, the results of its ``*.keep.yaml``
cases, the replay of recorded runs, and the permissions it needs that the
deployed version did not. `Verdict.ok` gates a deploy; `Verdict.render()` is the
prompt for a model that repairs the script (every problem with its fix hint, the
rule each one breaks, the reference of the connectors in use, the replay diffs).

`repair(source, fix)` calls ``fix(verdict) -> new_source`` until the verdict is
ok or `max_rounds` fixes were tried, and returns every round.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from keep_sdk.cases import CaseResult, run_case_file
from keep_sdk.config import KeepConfig
from keep_sdk.contract.manifest import Manifest
from keep_sdk.errors import ConfigurationError, KeepError
from keep_sdk.model import HostPolicy
from keep_sdk.plugins import KeepPlugins
from keep_sdk.repair.replay import ReplayOutcome, ReplaySummary, replay_runs
from keep_sdk.repair.surface import SurfaceDiff, diff_surfaces, surface_of
from keep_sdk.stores import Store
from keep_sdk.validator import Diagnostic, Severity

__all__ = ["Fixer", "RepairResult", "Round", "Verdict", "check", "repair"]


class _Out(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class Verdict(_Out):
    """Everything known about a script before it is deployed; `ok` gates the deploy.

    `ok` is True when the validator found no error, every case passed, no replayed
    run changed or would fail, and the script needs no permission the deployed
    version did not.
    """

    ok: bool
    source: str = Field(description="The script checked.")
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    cases: list[CaseResult] | None = Field(default=None, description="None: no cases given.")
    replay: ReplaySummary | None = Field(default=None, description="None: no replay asked.")
    permissions: SurfaceDiff | None = Field(
        default=None, description="Against the deployed version; None when none was given."
    )
    operations: list[str] = Field(
        default_factory=list, description="The connector operations the script calls."
    )
    connectors_reference: str = Field(
        default="", description="The connectors manifest of the operations in use (markdown)."
    )
    rules_reference: dict[str, str] = Field(
        default_factory=dict, description="Rule id → what it flags and why, for broken rules."
    )

    @property
    def problems(self) -> int:
        """How many things are wrong (errors, failed cases, changed or failing replays,
        new permissions); 0 when `ok`."""
        errors = sum(d.severity is Severity.ERROR for d in self.diagnostics)
        cases = sum(not c.ok for c in self.cases or [])
        replays = sum(
            r.outcome in (ReplayOutcome.CHANGED, ReplayOutcome.WOULD_FAIL)
            for r in (self.replay.runs if self.replay else [])
        )
        permissions = len(self.permissions.new_permissions) if self.permissions else 0
        return errors + cases + replays + permissions

    def render(self) -> str:
        """The verdict as a prompt for a model repairing the script (markdown)."""
        if self.ok:
            return "# Verdict: ok\n\nThe script validates, its cases pass and replays are the same."
        parts = [f"# Verdict: {self.problems} problem(s) to fix", ""]
        if self.diagnostics:
            parts += ["## Validator diagnostics", ""]
            for d in self.diagnostics:
                where = f" in {d.handler}" if d.handler else ""
                parts.append(f"- line {d.line}:{d.column}{where} [{d.rule}] {d.message}")
                parts.append(f"  fix: {d.hint}")
            parts.append("")
        failed = [c for c in self.cases or [] if not c.ok]
        if failed:
            parts += ["## Failing cases (expected vs actual)", ""]
            for case in failed:
                parts += [f"### {case.name}", "", "```diff", case.report(), "```", ""]
        runs = [
            r
            for r in (self.replay.runs if self.replay else [])
            if r.outcome in (ReplayOutcome.CHANGED, ReplayOutcome.WOULD_FAIL)
        ]
        if runs:
            parts += ["## Replay of recorded runs that changed or would fail", ""]
            for run in runs:
                parts.append(f"### {run.outcome.value}: {run.handler} ({run.run_id})")
                if run.error:
                    parts.append(run.error)
                for difference in run.differences:
                    parts += [f"{difference.what}:", "```diff", difference.diff, "```"]
                parts.append("")
        if self.permissions and self.permissions.new_permissions:
            needed = ", ".join(self.permissions.new_permissions)
            parts += [
                "## New permissions",
                "",
                f"The deployed version does not need {needed}; this one does. Do the same "
                "work with the operations the deployed version uses, unless the task asks "
                "for more.",
                "",
            ]
        if self.rules_reference:
            parts += ["## Rules broken", ""]
            parts += [f"- `{rule}`: {text}" for rule, text in sorted(self.rules_reference.items())]
            parts.append("")
        if self.connectors_reference:
            parts += [self.connectors_reference, ""]
        parts += ["## The script", "", "```js", self.source.rstrip(), "```", ""]
        return "\n".join(parts).rstrip() + "\n"


def _in_use(manifest: Manifest, operations: list[str], unknown: set[str]) -> Manifest:
    """The connectors of `operations` with only those operations; every operation of a
    connector in `unknown` (the script called one it does not have)."""
    used = set(operations)
    kept = []
    for connector in manifest.connectors:
        ops = [
            op
            for op in connector.operations
            if connector.name in unknown or f"{connector.name}.{op.name}" in used
        ]
        if ops:
            kept.append(connector.model_copy(update={"operations": ops}))
    return Manifest(connectors=kept)


def _manifest(plugins: KeepPlugins, config: KeepConfig) -> Manifest:
    """What scripts may call on an installation of `plugins` and `config`."""
    configured = config.build_connectors()
    try:
        extra = [connector.manifest() for connector in configured]
    finally:
        for connector in configured:
            close = getattr(connector, "close", None)
            if callable(close):
                close()
    return Manifest(connectors=[*plugins.manifest().connectors, *extra])


def check(
    source: str,
    *,
    deployed: str | None = None,
    cases: Path | str | None = None,
    replay: Store | None = None,
    workflow: str | None = None,
    plugins: KeepPlugins | None = None,
    policy: HostPolicy | None = None,
    filename: str | None = None,
    config: KeepConfig | None = None,
) -> Verdict:
    """Check `source` before it is deployed; see `Verdict`.

    The script is checked against the installation that will run it: the
    connectors of `plugins` (default: the installed ones) and of the ``keep.toml``
    `config` (default: none), and its cases run on that installation.

    `deployed`: the source of the version it replaces (for the permission diff).
    `cases`: a ``*.keep.yaml`` file, run with `source` in place of the script it
    names. `replay`: a store whose recorded runs of the workflow (`workflow`, or
    the script's name) are replayed. The cases and the replay run only when the
    validator found no error. Raises `ConfigurationError` for a case file or store
    that cannot be used.
    """
    plugins = plugins or KeepPlugins()
    config = config if config is not None else KeepConfig()
    connectors = _manifest(plugins, config)
    report = plugins.validate(source, policy=policy, filename=filename, connectors=connectors)
    rules = {rule.meta.id: rule.meta for rule in plugins.rules()}
    broken = {d.rule for d in report.diagnostics}
    rules_reference = {
        rule: f"{rules[rule].description} {rules[rule].rationale}".strip()
        for rule in broken
        if rule in rules
    }
    operations: list[str] = []
    diff: SurfaceDiff | None = None
    try:
        surface = surface_of(source, connectors=connectors, policy=policy, filename=filename)
    except KeepError:
        surface = None
    if surface is not None:
        operations = sorted(
            {
                op
                for handler in surface.handlers
                for ops in handler.operations.values()
                for op in ops
                if "." in op
            }
        )
        if deployed is not None:
            diff = diff_surfaces(surface_of(deployed, connectors=connectors), surface)
    case_results: list[CaseResult] | None = None
    replayed: ReplaySummary | None = None
    if report.ok and cases is not None:
        case_results = run_case_file(
            Path(cases), source=source, filename=filename, plugins=plugins, config=config
        )
    if report.ok and replay is not None and report.workflow is not None:
        replayed = replay_runs(
            source,
            replay,
            manifest=report.workflow,
            connectors=connectors,
            workflow=workflow,
            policy=policy,
        )
    unknown = {
        d.message.split("`")[1]
        for d in report.diagnostics
        if d.rule == "unknown-operation" and d.message.count("`") >= 2
    }
    in_use = _in_use(connectors, operations, unknown)
    reference = in_use.to_markdown() if in_use.connectors else ""
    ok = (
        report.ok
        and all(c.ok for c in case_results or [])
        and (replayed is None or replayed.ok)
        and not (diff and diff.new_permissions)
    )
    return Verdict(
        ok=ok,
        source=source,
        diagnostics=list(report.diagnostics),
        cases=case_results,
        replay=replayed,
        permissions=diff,
        operations=operations,
        connectors_reference=reference,
        rules_reference=rules_reference,
    )


Fixer = Callable[[Verdict], str]
"""``fix(verdict) -> new_source``: a model (or a person) repairing `Verdict.source`."""


class Round(_Out):
    """One round of the loop: the source checked and its verdict."""

    number: int
    source: str
    verdict: Verdict


class RepairResult(_Out):
    """Every round; `source` is the first clean one, else the one with the fewest problems."""

    ok: bool
    source: str
    rounds: list[Round]


def repair(
    source: str,
    fix: Fixer,
    *,
    max_rounds: int = 3,
    **check_options: object,
) -> RepairResult:
    """Check `source`; while the verdict is not ok and fewer than `max_rounds` fixes were
    tried, ask ``fix(verdict)`` for a new source and check that. `check_options`
    are passed to `check` (deployed=, cases=, replay=…). A fixer that raises
    `KeepError` ends the loop with the rounds so far."""
    if max_rounds < 0:
        raise ConfigurationError(f"max_rounds must be 0 or more, got {max_rounds}")
    rounds = [Round(number=0, source=source, verdict=check(source, **check_options))]  # type: ignore[arg-type]
    while not rounds[-1].verdict.ok and len(rounds) <= max_rounds:
        try:
            fixed = fix(rounds[-1].verdict)
        except KeepError:
            break
        verdict = check(fixed, **check_options)  # type: ignore[arg-type]
        rounds.append(Round(number=len(rounds), source=fixed, verdict=verdict))
    best = next((r for r in rounds if r.verdict.ok), None) or min(
        rounds, key=lambda r: r.verdict.problems
    )
    return RepairResult(ok=best.verdict.ok, source=best.source, rounds=rounds)
