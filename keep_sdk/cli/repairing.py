"""``keep repair FILE --model NAME``: the repair loop with a model `llm` knows.

Each round checks the script (validator, ``--cases``, ``--replay-store``, the
permissions against ``--deployed``) and, while the verdict is not ok, asks the
model for a fix. Exit 0 when a round is clean (its script is written to
``--output``, or printed), 1 when none is, 2 for bad usage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from keep_sdk.cli._options import json_option
from keep_sdk.cli.support import EXIT_PROBLEM, EXIT_USAGE, fail, print_json, read_text
from keep_sdk.cli.text import console, line, styled
from keep_sdk.errors import ConfigurationError
from keep_sdk.repair import repair
from keep_sdk.repair.llm_adapter import llm_fixer
from keep_sdk.stores import open_store

__all__ = ["repair_command"]


@click.command("repair")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--model", "model", required=True, help="A model id or alias `llm` knows.")
@click.option("--cases", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="A *.keep.yaml file whose cases each round must pass.")  # fmt: skip
@click.option("--deployed", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="The deployed version: new permissions are problems.")  # fmt: skip
@click.option("--replay-store", "replay_store", default=None, metavar="URL",
              help="Replay the recorded runs of this store each round.")  # fmt: skip
@click.option("--max-rounds", type=click.IntRange(min=0), default=3, show_default=True)
@click.option("--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the repaired script here (default: print it).")  # fmt: skip
@json_option
def repair_command(
    file: Path,
    model: str,
    cases: Path | None,
    deployed: Path | None,
    replay_store: str | None,
    max_rounds: int,
    output: Path | None,
    as_json: bool,
) -> None:
    """Check FILE and let the model fix it until the verdict is ok or the rounds run out."""
    source = read_text(file)
    options: dict[str, Any] = {"cases": cases, "filename": file.name}
    if deployed is not None:
        options["deployed"] = read_text(deployed)
    store = None
    try:
        fixer = llm_fixer(model)
        if replay_store is not None:
            store = open_store(replay_store)
            options["replay"] = store
        result = repair(source, fixer, max_rounds=max_rounds, **options)
    except ConfigurationError as exc:
        fail(str(exc), code=EXIT_USAGE)
    finally:
        if store is not None:
            store.close()
    if output is not None and result.ok:
        output.write_text(result.source, encoding="utf-8")
    if as_json:
        print_json(result)
    else:
        out = console()
        for round_ in result.rounds:
            verdict = round_.verdict
            state = (
                styled("ok", "green")
                if verdict.ok
                else styled(f"{verdict.problems} problem(s)", "yellow")
            )
            out.print(line(f"round {round_.number}: ", state), soft_wrap=True)
        if result.ok and output is None:
            click.echo(result.source, nl=False)
        elif not result.ok:
            out.print(styled("no clean verdict; the last problems:", "bold red"), soft_wrap=True)
            click.echo(result.rounds[-1].verdict.render(), nl=False)
    if not result.ok:
        raise SystemExit(EXIT_PROBLEM)
