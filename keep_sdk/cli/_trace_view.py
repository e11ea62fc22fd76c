"""``keep runs RUN --trace``: a run's calls, phase by phase, for people.

A mutation shows its outcome (`call_outcome`: applied, failed, uncertain, ...) where
the stored trace says ``requested``. Every string from the script, its arguments or a
connector's result is printed as literal text (`styled`), never as markup. Values are
shown as compact JSON, cut at `VALUE_WIDTH` characters; ``--json`` gives them whole.
"""

from __future__ import annotations

import json

from pydantic import JsonValue
from rich.console import Console
from rich.text import Text

from keep_sdk.cli.text import line, styled
from keep_sdk.model import PhaseTrace, RunRecord, TraceCall
from keep_sdk.runtime import call_outcome

__all__ = ["VALUE_WIDTH", "print_trace"]

VALUE_WIDTH = 160
"""Characters of an argument or result shown in text output."""

_STATUS_STYLE = {
    "ok": "green",
    "requested": "cyan",
    "applied": "green",
    "skipped": "yellow",
    "resolved": "yellow",
    "uncertain": "yellow",
    "failed": "red",
    "refused": "red",
    "dropped": "yellow",
}


def _short(value: JsonValue) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"


def _call(call: TraceCall, run: RunRecord, console: Console) -> None:
    status = call_outcome(call, run)
    where = f" (line {call.line})" if call.line is not None else ""
    millis = f"{call.duration_s * 1000:.1f} ms"
    console.print(
        line(
            "    ",
            styled(status, _STATUS_STYLE.get(status, "")),
            "  ",
            styled(call.operation, "bold"),
            styled(f"  {millis}{where}", "dim"),
        ),
        soft_wrap=True,
    )
    console.print(line("      args   ", styled(_short(call.arguments))), soft_wrap=True)
    if call.error is not None:
        kind = f"{call.failure.value}: " if call.failure else ""
        console.print(line("      error  ", styled(kind + call.error, "red")), soft_wrap=True)
    elif status == "uncertain":
        reason = run.error or "nobody knows whether it happened"
        console.print(line("      why    ", styled(reason, "yellow")), soft_wrap=True)
    elif status in ("ok", "applied"):
        console.print(line("      result ", styled(_short(call.result))), soft_wrap=True)


def _phase(phase: PhaseTrace, run: RunRecord, console: Console) -> None:
    cut = " · arguments or results left out (trace budget)" if phase.truncated else ""
    calls = len(phase.calls)
    noun = "call" if calls == 1 else "calls"
    console.print(
        styled(f"  {phase.phase.value}: {calls} {noun} · {phase.wall_time_s * 1000:.1f} ms{cut}"),
        soft_wrap=True,
    )
    for call in phase.calls:
        _call(call, run, console)


def print_trace(run: RunRecord, console: Console) -> None:
    """The run's header line, then each phase it ran with its calls."""
    header: Text = line(styled(run.id, "bold"), "  ", styled(run.status.value))
    console.print(header, soft_wrap=True)
    console.print(
        styled(f"  {run.workflow} v{run.workflow_version} · {run.handler}", "dim"), soft_wrap=True
    )
    if not run.trace:
        console.print(styled("  no calls recorded", "dim"), soft_wrap=True)
    for phase in run.trace:
        _phase(phase, run, console)
