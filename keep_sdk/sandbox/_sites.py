"""The host's check that a ctx call comes from a call site the validator approved.

The prelude's stub records the stack at the call, formatted by the pinned
``Error.prepareStackTrace`` (one line per frame, names on one line, the location at the
end of the line), so a script cannot forge a frame. The first two frames are the
prelude's (``request`` and the stub); the third is the caller. The call is approved only
when that caller is a frame of the script at a position the validator recorded for the
phase with the same operation (inside the call expression, not inside a function written
in it: `keep_sdk.contract.workflow.CallSite`). A stub run with a `this` other than its
connector (the operation itself used as a getter or hook) records an ``(implicit)``
caller, and stubs cannot be bound, so no implicit path reaches the host as a site. A call made by
the engine on the script's behalf (a getter, ``toJSON``, a thenable, a replacer, a
comparator, a Proxy trap) has a built-in or an unattributed function as its caller and
is refused, before anything is sent. A phase run without recorded sites approves no
call (fail closed); only `PhaseRequest.unchecked_sites` (tests of the sandbox alone) skips
the check.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from keep_sdk.contract.workflow import CallSite
from keep_sdk.sandbox._failures import PRELUDE_PAD
from keep_sdk.sandbox.returns import Marked

__all__ = ["ApprovedSites", "caller_frame"]

_PRELUDE_LINE: Final = "(<input>:1:"
_SCRIPT: Final = "(<input>:"


def _location(frame: str) -> tuple[int, int] | None:
    """(line, column) read at the end of a frame line, None when it names no script place."""
    if not frame.endswith(")"):
        return None
    at = frame.rfind(_SCRIPT)
    if at < 0:
        return None
    line, _, column = frame[at + len(_SCRIPT) : -1].partition(":")
    if not (line.isdigit() and column.isdigit()):
        return None
    return int(line), int(column)


def caller_frame(stack: str) -> tuple[str, tuple[int, int] | None]:
    """The frame line that called the stub and its (line, column) in the marked text,
    None when it is not a frame of the script (a built-in, a prelude frame, none)."""
    first = stack.find("\n")
    second = stack.find("\n", first + 1) if first >= 0 else -1
    if second < 0 or _PRELUDE_LINE not in stack[:first] or _PRELUDE_LINE not in stack[first:second]:
        return "", None
    third = stack.find("\n", second + 1)
    caller = stack[second + 1 : third if third >= 0 else len(stack)].strip()
    where = _location(caller)
    if where is None or (where[0] == 1 and where[1] > PRELUDE_PAD):
        return caller, None
    return caller, where


_Point = tuple[int, int]
_Range = tuple[_Point, _Point, tuple[tuple[_Point, _Point], ...]]


class ApprovedSites:
    """The approved ctx call sites of one phase, checked against a call's stack."""

    __slots__ = ("_by_name", "_marked", "_ranges", "_recorded")

    def __init__(self, sites: Iterable[CallSite] | None, marked: Marked) -> None:
        self._marked = marked
        self._recorded = sites is not None
        sites = sites or ()
        self._by_name: dict[str, list[CallSite]] = {}
        self._ranges: dict[str, list[_Range]] = {}
        for site in sites:
            self._by_name.setdefault(site.name, []).append(site)
            holes = tuple(((h[0], h[1]), (h[2], h[3])) for h in site.holes)
            start, end = (site.line, site.column), (site.end_line, site.end_column)
            self._ranges.setdefault(site.name, []).append((start, end, holes))

    def _covered(self, name: str, at: tuple[int, int]) -> bool:
        for start, end, holes in self._ranges.get(name, ()):
            if start <= at < end and not any(a <= at < b for a, b in holes):
                return True
        return False

    def refusal(self, name: str, stack: str, where: str) -> str | None:
        """None when the call of ctx.`name` with `stack` is from an approved site of the
        phase (`where`: ``mutate of 'c'``), else the message that refuses it."""
        caller, at = caller_frame(stack)
        if at is not None:
            line, column = at[0], self._marked.original_column(at[0], at[1])
            if self._covered(name, (line, column)):
                return None
            place = f"at line {line}, column {column}"
        elif caller.endswith("(implicit)"):
            place = (
                "implicitly: the operation itself was run as a getter, toJSON, then, trap or "
                "conversion hook (its `this` was not its connector)"
            )
        elif caller.endswith("(native)"):
            place = f"by a built-in ({caller.removeprefix('at ')}), not by a line of the script"
        else:
            place = "from outside the script's own lines"
        if not self._recorded:
            return (
                f"ctx.{name} was called {place}, but the phase was run without the call sites "
                f"the validator approved for {where}, so no ctx call is approved: run the "
                "phase through the runtime or replay (they pass the sites of the checked "
                "script), or pass `call_sites` from its validated manifest; the call was "
                "refused and nothing was sent"
            )
        known = self._by_name.get(name, [])
        approved = (
            "the approved sites of ctx."
            + name
            + " in this phase are "
            + ", ".join(f"line {s.line}, column {s.column}" for s in known[:5])
            if known
            else "the validator approved no call of ctx." + name + " in this phase"
        )
        return (
            f"ctx.{name} was called {place}, which is not a ctx call site the validator "
            f"approved for {where}: a ctx call must be an ordinary call in the handler, in a "
            "helper it calls or in an array-method callback, never from a getter, toJSON, "
            "then, a replacer, a comparator, a reviver, a Proxy trap or another implicit "
            f"path ({approved}); the call was refused and nothing was sent"
        )
