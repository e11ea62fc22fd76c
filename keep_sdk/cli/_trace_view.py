"""``keep runs RUN --trace``: a run's calls, phase by phase, for people.

Every string from the script, its arguments or a connector's result is printed as
literal text (`styled`), never as markup. Values are shown as compact JSON, cut
at `VALUE_WIDTH` characters; ``--json`` gives them whole.
"""

from __future__ import annotations

import json

from pydantic import JsonValue
from rich.console import Console
from rich.text import Text

from keep_sdk.cli.text import line, styled
from keep_sdk.model import PhaseTrace, RunRecord, TraceCall

__all__ = ["VALUE_WIDTH", "print_trace"]

VALUE_WIDTH = 160
"""Characters of an argument or result shown in text output."""

_STATUS_STYLE = {
    "ok": "green",
    "requested": "cyan",
    "failed": "red",
    "refused": "red",
    "dropped": "yellow",
}


def _short(value: JsonValue) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"


def _call(call: TraceCall, console: Console) -> None:
    where = f" (line {call.line})" if call.line is not None else ""
    millis = f"{call.duration_s * 1000:.1f} ms"
    console.print(
        line(
            "    ",
            styled(call.status, _STATUS_STYLE.get(call.status, "")),
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
    elif call.status in ("ok", "requested"):
        console.print(line("      result ", styled(_short(call.result))), soft_wrap=True)


def _phase(phase: PhaseTrace, console: Console) -> None:
    cut = " · arguments or results left out (trace budget)" if phase.truncated else ""
    calls = len(phase.calls)
    noun = "call" if calls == 1 else "calls"
    console.print(
        styled(f"  {phase.phase.value}: {calls} {noun} · {phase.wall_time_s * 1000:.1f} ms{cut}"),
        soft_wrap=True,
    )
    for call in phase.calls:
        _call(call, console)


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
        _phase(phase, console)
