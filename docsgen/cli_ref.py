"""The CLI reference: every ``keep`` command and its parameters, from the click group."""

from __future__ import annotations

import inspect

import click

from docsgen.markdown import code, table
from docsgen.page import Page

__all__ = ["PATH", "cli_page", "commands"]

PATH = "reference/cli.md"


def commands(group: click.Group) -> list[tuple[str, click.Command]]:
    """Every command under `group` as (full name, command), subcommands of nested
    groups included, sorted by name."""
    found: list[tuple[str, click.Command]] = []
    ctx = click.Context(group, info_name="keep")
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        found.append((name, command))
        if isinstance(command, click.Group):
            found += [(f"{name} {sub}", cmd) for sub, cmd in commands(command)]
    return found


def _type(param: click.Parameter) -> str:
    if isinstance(param, click.Option) and param.is_flag:
        return "flag"
    if isinstance(param.type, click.Choice):
        return " | ".join(str(c) for c in param.type.choices)
    return param.type.name.upper() if param.type.name else ""


def _default(param: click.Parameter, ctx: click.Context) -> str:
    default = param.get_default(ctx, call=False)
    if type(default).__name__ == "Sentinel":  # click >= 8.3 marks "no default" so
        default = None
    if isinstance(param, click.Option) and param.is_flag and not param.secondary_opts:
        return "on" if default else "off"
    if default is None or callable(default) or default in ((), []):
        return ""
    if isinstance(default, list | tuple):
        return ", ".join(code(str(d)) for d in default)
    return code(str(default))


def _names(param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        return code(param.human_readable_name)
    names = [*param.opts, *param.secondary_opts]
    return ", ".join(code(n) for n in names)


def _notes(param: click.Parameter) -> str:
    notes = []
    if param.required:
        notes.append("required")
    if param.multiple or (isinstance(param, click.Argument) and param.nargs == -1):
        notes.append("repeatable")
    if isinstance(param, click.Option) and param.envvar:
        notes.append(f"env {code(str(param.envvar))}")
    return ", ".join(notes)


def _visible(command: click.Command, ctx: click.Context) -> list[click.Parameter]:
    """The parameters a user types, without ``--help`` (every command has it)."""
    help_names = set(ctx.help_option_names)
    return [
        p
        for p in command.get_params(ctx)
        if not getattr(p, "hidden", False) and not (set(p.opts) & help_names)
    ]


def command_section(name: str, command: click.Command) -> str:
    """The Markdown section of one command: usage, help, parameter table."""
    ctx = click.Context(command, info_name=f"keep {name}")
    usage = " ".join(command.collect_usage_pieces(ctx))
    out = [f"## keep {name}\n", f"```\nkeep {name} {usage}\n```\n"]
    if command.help:
        out.append(inspect.cleandoc(click.unstyle(command.help)) + "\n")
    params = _visible(command, ctx)
    if params:
        rows = [
            (
                _names(p),
                _type(p),
                _default(p, ctx),
                _notes(p),
                getattr(p, "help", None) or "",
            )
            for p in params
        ]
        out.append(table(["parameter", "type", "default", "", "meaning"], rows))
    return "\n".join(out)


def cli_page(group: click.Group) -> Page:
    """The whole reference page of `group` (the ``keep`` command)."""
    ctx = click.Context(group, info_name="keep")
    names = commands(group)
    head = [
        "# CLI reference\n",
        "Generated from the click definitions of `keep_sdk.cli` at build time; "
        "for how the commands fit together see [the command line guide](../cli.md).\n",
        click.unstyle(group.help or "").strip() + "\n",
        "```\nkeep " + " ".join(group.collect_usage_pieces(ctx)) + "\n```\n",
        "Every command also takes `-h`/`--help`.\n",
        table(
            ["option", "meaning"],
            [(_names(p), getattr(p, "help", None) or "") for p in _visible(group, ctx)],
        ),
        "## Commands\n",
        table(
            ["command", "what it does"],
            [
                (f"[{code('keep ' + n)}](#{_anchor(n)})", c.get_short_help_str(limit=200))
                for n, c in names
            ],
        ),
    ]
    body = [command_section(n, c) for n, c in names]
    return Page(PATH, "CLI", "\n".join(head + body))


def _anchor(name: str) -> str:
    return "keep-" + name.replace(" ", "-")
