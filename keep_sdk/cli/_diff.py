"""``keep diff OLD NEW``: how two versions of a workflow differ in what they may do.

OLD and NEW are script files, or deployed versions in the store (``invoices@2``;
``invoices`` alone is the current version). Exit 0 when the new version needs no
permission the old one did not, 1 when it does (a person must grant it before its
runs can make those calls), 2 for bad input.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

from keep_sdk.app import Installation
from keep_sdk.cli._options import json_option, opened, store_option
from keep_sdk.cli.support import EXIT_PROBLEM, EXIT_USAGE, fail, loaded_plugins, print_json
from keep_sdk.cli.text import console, line, styled
from keep_sdk.errors import ConfigurationError, KeepError, NotFound
from keep_sdk.repair.surface import SurfaceDiff, WorkflowSurface, diff_surfaces, surface_of

__all__ = ["diff_command"]

_REF = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)(@(?P<version>[0-9]+))?$")


def _deployed(inst: Installation, ref: str) -> tuple[str, str]:
    match = _REF.match(ref)
    if match is None:
        raise ConfigurationError(
            f"{ref!r} is neither a script file nor a deployed version (workflow or workflow@N)"
        )
    name, version = match["name"], match["version"]
    try:
        stored = inst.store.get_workflow_version(name, int(version) if version else None)
    except NotFound as exc:
        raise ConfigurationError(
            f"{ref!r} is not a file, and the store has no such version: {exc}"
        ) from None
    return stored.source, f"{name}@v{stored.version}"


def _surfaces(old: str, new: str, store_url: str | None) -> tuple[WorkflowSurface, WorkflowSurface]:
    manifest = loaded_plugins().manifest()
    found: dict[str, tuple[str, str]] = {}
    missing = [ref for ref in (old, new) if not Path(ref).is_file()]
    for ref in (old, new):
        if ref not in missing:
            found[ref] = (Path(ref).read_text(encoding="utf-8"), ref)
    if missing:
        with opened(store_url, read_only=True) as inst:
            for ref in missing:
                found[ref] = _deployed(inst, ref)
    return tuple(  # type: ignore[return-value]
        surface_of(source, connectors=manifest, filename=label)
        for source, label in (found[old], found[new])
    )


def _render(diff: SurfaceDiff) -> None:
    out = console()
    if diff.empty:
        out.print(
            "no difference in topics, handlers, schedules, subscriptions, operations "
            "or permissions",
            soft_wrap=True,
        )
        return
    for label, items, sign in (
        ("topics", diff.topics_added, "+"),
        ("topics", diff.topics_removed, "-"),
        ("handlers", diff.handlers_added, "+"),
        ("handlers", diff.handlers_removed, "-"),
    ):
        for item in items:
            out.print(line(f"{sign} {label[:-1]} ", styled(item, "bold")), soft_wrap=True)
    for change in diff.handlers_changed:
        out.print(line("~ handler ", styled(change.name, "bold")), soft_wrap=True)
        for field, values in change.changes.items():
            if (
                field == "operations"
                and isinstance(values.old, dict)
                and isinstance(values.new, dict)
            ):
                _operations(values.old, values.new)
                continue
            out.print(
                line(f"    {field}: ", styled(repr(values.old)), " → ", styled(repr(values.new))),
                soft_wrap=True,
            )
    if diff.dropped_permissions:
        out.print(f"no longer needs: {', '.join(diff.dropped_permissions)}", soft_wrap=True)
    if diff.new_permissions:
        needed = ", ".join(diff.new_permissions)
        out.print(
            styled(
                f"needs new permissions: {needed} (runs pause for approval until granted)",
                "bold red",
            ),
            soft_wrap=True,
        )


def _operations(old: dict[str, Any], new: dict[str, Any]) -> None:
    out = console()
    for phase in sorted(old.keys() | new.keys()):
        before, after = set(old.get(phase, [])), set(new.get(phase, []))
        for name in sorted(after - before):
            out.print(line(f"    {phase}: + ", styled(name, "green")), soft_wrap=True)
        for name in sorted(before - after):
            out.print(line(f"    {phase}: - ", styled(name, "red")), soft_wrap=True)


@click.command("diff")
@click.argument("old")
@click.argument("new")
@store_option
@json_option
def diff_command(old: str, new: str, store_url: str | None, as_json: bool) -> None:
    """Compare two versions of a workflow: topics, handlers, schedules, subscriptions, the
    operations each phase may reach, and the permissions NEW needs that OLD did not.
    OLD and NEW are files or deployed versions (name or name@N, from --store)."""
    try:
        before, after = _surfaces(old, new, store_url)
    except ConfigurationError as exc:
        fail(str(exc), code=EXIT_USAGE)
    except KeepError as exc:
        fail(str(exc))
    diff = diff_surfaces(before, after)
    if as_json:
        print_json(diff)
    else:
        _render(diff)
    if diff.new_permissions:
        raise SystemExit(EXIT_PROBLEM)
