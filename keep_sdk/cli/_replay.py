"""``keep replay FILE --store URL``: a new version of a script against recorded runs.

Exit 0 when every replayed run is ``same`` (or unreplayable), 1 when one changed or
would fail (so a repair loop can gate on it) or the script does not validate, 2 for
bad input (no such store or workflow, an unreadable file, a bad --since).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from keep_sdk.cli._options import json_option, opened, store_option
from keep_sdk.cli.support import EXIT_PROBLEM, EXIT_USAGE, fail, print_json, read_text
from keep_sdk.cli.text import console, line, styled
from keep_sdk.errors import ConfigurationError, ScriptRejected
from keep_sdk.repair import ReplayOutcome, ReplaySummary, replay_runs

__all__ = ["replay_command"]

_STYLE = {
    ReplayOutcome.SAME: "green",
    ReplayOutcome.CHANGED: "bold yellow",
    ReplayOutcome.WOULD_FAIL: "bold red",
    ReplayOutcome.UNREPLAYABLE: "magenta",
}


def _since(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not an ISO date or time (2026-11-22 or 2026-11-22T08:00:00Z)",
            param_hint="--since",
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _render(summary: ReplaySummary) -> None:
    out = console()
    for run in summary.runs:
        out.print(
            line(
                styled(f"{run.outcome.value:<13}", _STYLE[run.outcome]),
                styled(run.handler, "bold"),
                styled(f"  {run.run_id}", "dim"),
            ),
            soft_wrap=True,
        )
        if run.error:
            out.print(line("    ", styled(run.error)), soft_wrap=True)
        for difference in run.differences:
            out.print(line("    ", styled(f"{difference.what}:", "bold")), soft_wrap=True)
            for text in difference.diff.splitlines():
                out.print(line("      ", styled(text)), soft_wrap=True)
    counts = ", ".join(f"{n} {k}" for k, n in sorted(summary.counts.items())) or "no runs"
    skipped = f" ({summary.skipped} not committed, not replayed)" if summary.skipped else ""
    out.print(styled(f"{summary.workflow}: {counts}{skipped}", "bold"), soft_wrap=True)
    if summary.new_permissions:
        needed = ", ".join(summary.new_permissions)
        out.print(
            styled(f"needs permissions the workflow has not been granted: {needed}", "bold red"),
            soft_wrap=True,
        )


@click.command("replay")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@store_option
@click.option("--workflow", default=None, help="The recorded workflow (default: the script's).")
@click.option("--since", default=None, help="Only runs created at or after this ISO time.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="The most recent N runs.")
@json_option
def replay_command(
    file: Path,
    store_url: str | None,
    workflow: str | None,
    since: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """Run FILE against the recorded traces of past runs: reads come from the traces, no
    connector is called and nothing is written. Each run is same, changed (with a diff),
    would-fail or unreplayable."""
    source = read_text(file)
    start = _since(since)
    try:
        with opened(store_url, read_only=True) as inst:
            try:
                loaded = inst.runtime.load_workflow  # the installation's plugins and rules
                assert loaded is not None
                checked = loaded(
                    source,
                    connectors=inst.connectors.manifest(),
                    policy=inst.runtime.policy,
                    filename=str(file),
                )
            except ScriptRejected as exc:
                fail(str(exc))
            summary = replay_runs(
                source,
                inst.store,
                manifest=checked.manifest,
                connectors=inst.connectors.manifest(),
                workflow=workflow,
                since=start,
                limit=limit,
                policy=inst.runtime.policy_for(workflow or checked.manifest.name or ""),
                isolation=inst.runtime.isolation,
            )
    except ConfigurationError as exc:
        fail(str(exc), code=EXIT_USAGE)
    if as_json:
        print_json(summary)
    else:
        _render(summary)
    if not summary.ok:
        raise SystemExit(EXIT_PROBLEM)
