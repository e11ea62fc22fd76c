"""``keep test``: run a workflow's cases on the installation that will run it, with a
manual clock, seeded doubles and recording stand-ins, and compare what happened with
what each case expects.

Each case opens its own `keep_sdk.app.Installation` on a fresh ``memory://``
store: the user's plugins and ``keep.toml`` (so every connector ``keep run``
offers is there: plugin connectors, configured connectors, every built-in double
such as ``approvals`` and ``jobs``), a clock that moves only when a step says so
(starting at the case's `start`, else `CASE_START`), and the doubles seeded with
the case's data. Every other connector (``keep.toml``'s, a plugin's real one) is a
recording stand-in with its operations (`keep_sdk.cases._standin`), unless the case
lists it in ``live``. Runs are deterministic (``Date`` is the clock, ``Math.random``
seeded by the run) and run in-process, so a case gives the same result every time.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.app import DEFAULT_ISOLATION, IsolationChoice, isolation_of, read_config
from keep_sdk.cases._expect import mutations, publishes, run_counts
from keep_sdk.cases._load import load_case_file
from keep_sdk.cases._model import CASE_START, Case, CaseFile
from keep_sdk.cases._play import play
from keep_sdk.cases._result import Mismatch
from keep_sdk.cases._world import Harness, World
from keep_sdk.config import KeepConfig
from keep_sdk.errors import ConfigurationError, KeepError
from keep_sdk.plugins import KeepPlugins, default_plugins

__all__ = ["CaseResult", "run_case", "run_case_file", "select_cases", "workflow_source"]


class CaseResult(BaseModel):
    """How one case went."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )

    name: str
    ok: bool
    mismatches: list[Mismatch] = Field(default_factory=list)
    mutations: list[JsonValue] = Field(
        default_factory=list, description="Every mutation the runs asked for, in order."
    )
    publishes: list[JsonValue] = Field(
        default_factory=list, description="Every event the runs published, in order."
    )
    runs: dict[str, int] = Field(default_factory=dict)

    def report(self) -> str:
        """The mismatches as text for people (empty when the case passed)."""
        parts = []
        for mismatch in self.mismatches:
            at = "" if mismatch.where in ("", "end state") else f"{mismatch.where}: "
            parts.append(f"{at}{mismatch.what}:")
            body = mismatch.diff or f"expected {mismatch.expected!r}, got {mismatch.actual!r}"
            parts.extend("  " + line for line in body.splitlines())
        return "\n".join(parts)


def _harness(
    plugins: KeepPlugins | None, config: KeepConfig | None, isolation: IsolationChoice
) -> Harness:
    plugins = plugins or default_plugins()
    return Harness(
        plugins=plugins,
        config=config if config is not None else read_config(plugins=plugins),
        worker="keep-test",
        source="keep-test",
        isolation=isolation,
    )


def run_case(
    source: str,
    case: Case,
    cases: CaseFile,
    *,
    filename: str = "",
    plugins: KeepPlugins | None = None,
    config: KeepConfig | None = None,
    isolation: IsolationChoice = DEFAULT_ISOLATION,
) -> CaseResult:
    """Run one case from scratch on an installation of `plugins` (default: the installed
    ones) and `config` (default: `keep_sdk.app.read_config`) and compare. Each phase runs
    in `isolation`: by default in a worker process, as the installation runs the script.

    A script the validator rejects, or a step that fails, is a mismatch (``error``)
    whose message names `filename`; a case that cannot be carried out (an unknown
    double, bad seed data) raises `ConfigurationError`."""
    world = World.open(
        _harness(plugins, config, isolation), case.start or cases.start or CASE_START
    )
    try:
        where = f"case {case.name!r}"
        world.stand_ins.where = where
        world.stand_ins.set_live(case.live if case.live is not None else cases.live, source=where)
        seeds = {**cases.connectors, **case.connectors}
        world.seed(seeds, replace=True, source=f"{where}: connectors")
        world.deploy(source, filename=filename or None)
        world.grant(case.grants if case.grants is not None else cases.grants)
        mismatches = play(world, case.steps, case.expect)
        mismatches += [Mismatch.note("", problem) for problem in world.stand_ins.problems()]
        observed = (mutations(world), publishes(world), run_counts(world))
    except ConfigurationError:
        raise
    except KeepError as exc:
        return CaseResult(name=case.name, ok=False, mismatches=[Mismatch.note("", str(exc))])
    finally:
        world.close()
    return CaseResult(
        name=case.name,
        ok=not mismatches,
        mismatches=mismatches,
        mutations=observed[0],
        publishes=observed[1],
        runs=observed[2],
    )


def select_cases(cases: CaseFile, names: Sequence[str]) -> list[Case]:
    """The cases named (all when none is); an unknown name is a `ConfigurationError`."""
    if not names:
        return list(cases.cases)
    known = {case.name: case for case in cases.cases}
    chosen = []
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigurationError(
                f"no case named {name!r}; {hint}cases: {', '.join(repr(n) for n in known)}"
            )
        chosen.append(known[name])
    return chosen


def workflow_source(path: Path, cases: CaseFile) -> tuple[Path, str]:
    """The script a case file tests: its path and source."""
    script = (path.parent / cases.workflow).resolve()
    try:
        return script, script.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(
            f"{path}: cannot read the workflow {cases.workflow!r} ({exc.strerror or exc}); "
            "`workflow` is a path relative to the case file"
        ) from None


def run_case_file(
    path: Path,
    names: Sequence[str] = (),
    *,
    source: str | None = None,
    filename: str | None = None,
    plugins: KeepPlugins | None = None,
    config: KeepConfig | None = None,
    isolation: IsolationChoice = DEFAULT_ISOLATION,
) -> list[CaseResult]:
    """Run the cases of the file at `path` (those named, or all) with `run_case`.

    `source` replaces the script the file names (a repaired version under test);
    its messages name `filename`, else the script the file names. With ``process``
    isolation (the default) the cases share one pool of worker processes, stopped when
    the file is done."""
    cases = load_case_file(path)
    chosen = select_cases(cases, names)
    if source is None:
        script, text = workflow_source(path, cases)
    else:
        script, text = (path.parent / cases.workflow), source
    shown = filename or script.name
    plugins = plugins or default_plugins()
    config = config if config is not None else read_config(plugins=plugins)
    pool = isolation_of(isolation) if isinstance(isolation, str) else None
    try:
        return [
            run_case(
                text,
                case,
                cases,
                filename=shown,
                plugins=plugins,
                config=config,
                isolation=pool or isolation,
            )
            for case in chosen
        ]
    finally:
        close = getattr(pool, "close", None)
        if callable(close):
            close()
