"""``keep test FILE [CASES...]``: run a workflow's YAML cases with no external effect.

Exit 0 when every case passed, 1 when one failed (each failure printed as a diff
of what was expected and what happened), 2 for a case file that cannot be read or
is malformed (one message naming the field, with a did-you-mean).
"""

from __future__ import annotations

from pathlib import Path

import click
from pydantic import TypeAdapter

from keep_sdk.cli._options import configuration, isolation_option, json_option
from keep_sdk.cli.support import EXIT_PROBLEM, EXIT_USAGE, fail
from keep_sdk.cli.text import console, line, styled
from keep_sdk.errors import ConfigurationError
from keep_sdk.repair import CaseResult, run_case_file

__all__ = ["test_command"]

_RESULTS = TypeAdapter(list[CaseResult])


@click.command("test")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("cases", nargs=-1)
@isolation_option
@json_option
def test_command(file: Path, cases: tuple[str, ...], isolation: str, as_json: bool) -> None:
    """Run the cases of a *.keep.yaml file (all, or those named) on a memory store against
    recording doubles and stand-ins: connector reads come from the file's data, mutations
    are recorded, nothing leaves the process (but for connectors a case lists in `live`)."""
    config = configuration(None)
    try:
        results = run_case_file(file, cases, config=config, isolation=isolation)
    except ConfigurationError as exc:
        fail(str(exc), code=EXIT_USAGE)
    if as_json:
        click.echo(_RESULTS.dump_json(results, indent=2, by_alias=True).decode())
    else:
        out = console()
        for result in results:
            mark = styled("pass", "green") if result.ok else styled("FAIL", "bold red")
            out.print(line(mark, "  ", styled(result.name)), soft_wrap=True)
            if not result.ok:
                for text in result.report().splitlines():
                    out.print(line("    ", styled(text)), soft_wrap=True)
        failed = sum(not r.ok for r in results)
        summary = f"{len(results) - failed} passed, {failed} failed"
        out.print(styled(summary, "bold" if failed else "green"), soft_wrap=True)
    if any(not r.ok for r in results):
        raise SystemExit(EXIT_PROBLEM)
