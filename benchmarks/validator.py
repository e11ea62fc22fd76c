"""Validator speed over the fixture corpus, as a ratio to a bare tree-sitter parse.

Run: ``python benchmarks/validator.py [--rounds N]``; ``--scaling`` for the growth mode,
``--fuzz N`` for the long fuzz run (both described below).

For every script in ``fixtures/workflows`` it measures, interleaved in the
same rounds, ``tree_sitter.Parser.parse`` of the script's bytes (the
baseline) and ``keep_sdk.validator.validate`` of the script (parse, QuickJS
early-error compile, shape extraction, analysis, every rule, the report). It
prints the median of each per script, the median ratio over the corpus and
the ratio of the summed medians. Target: the median ratio is at most 3.

In the same rounds it times ``keep_sdk.validate(source)`` with default
arguments (the installed plugins' registries, looked up per call) and, when
Node.js is installed and ``npm install`` has run in ``benchmarks/eslint``,
ESLint 9 with 12 core rules linting the same scripts warm in one long-lived
process (``benchmarks/eslint/lint.mjs``), alternating with the validator round
by round. Target: the validator is at least 3 times faster than ESLint
(median over the scripts of ESLint's time divided by the validator's).
It then prints where the time goes per stage, and the floors every design
pays (`floors`): the QuickJS compile and one Python visit of every named node.

``--scaling`` reports, instead, validate/parse on the corpus (median ratio) and on
generated scripts of many shapes (long binary chains, deep nesting of calls, members,
optional chains, arrays, objects and arrow functions, many declarations, templates,
helpers, handlers, non-ASCII text) at 1x, 2x, 4x and 8x a base size: the CPU time
of `validate` (fastest of `--rounds` runs) and its ratio to the parse, and the slope
``time(8n) / (8 * time(n))``. Target: every slope is at most 1.1 (linear time).

``--fuzz N`` validates N generated inputs (fixture scripts with lone surrogates, NUL,
template escapes, deep nesting, long chains and random unicode inserted, random text
and random bytes) and reports any exception and the slowest input per KB; inputs that
raise are written to ``--fuzz-out``. It is meant to run for hours (N >= 1,000,000),
not in CI.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import shutil
import statistics
import subprocess
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import tree_sitter

from keep_sdk.connectors import builtin_manifest
from keep_sdk.model import HostPolicy
from keep_sdk.plugins import KeepPlugins
from keep_sdk.validator import validate
from keep_sdk.validator.source import JAVASCRIPT
from tests.validator.growing import HAZARDS, SHAPES

CORPUS = Path(__file__).parents[1] / "fixtures" / "workflows"
ESLINT = Path(__file__).parent / "eslint"
TARGET = 3.0
ESLINT_TARGET = 3.0
ESLINT_WARMUP_ROUNDS = 60


class Eslint:
    """ESLint 9 in a long-lived Node.js process, linting the corpus one round per request."""

    def __init__(self, sources: list[str]) -> None:
        self.process = subprocess.Popen(
            ["node", str(ESLINT / "lint.mjs")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ESLINT,
        )
        self._send(json.dumps(sources))
        ready = json.loads(self._receive())
        self.rules = int(ready["rules"])
        for _ in range(ESLINT_WARMUP_ROUNDS):
            self.round()

    @staticmethod
    def available() -> bool:
        """True when node is on PATH and ESLint is installed in benchmarks/eslint."""
        return shutil.which("node") is not None and (ESLINT / "node_modules" / "eslint").is_dir()

    def _send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def _receive(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline()

    def round(self) -> list[float]:
        """Seconds ESLint took on each script, in corpus order."""
        self._send("round")
        return [float(seconds) for seconds in json.loads(self._receive())]

    def close(self) -> None:
        self._send("quit")
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


class Timing:
    """Per-script medians (seconds) of the parse, `validate` with prebuilt registries,
    ``keep_sdk.validate`` with default arguments, and ESLint (None when not installed)."""

    def __init__(self, name: str, samples: tuple[list[float], ...]) -> None:
        parses, checks, defaults, eslints = samples
        self.name = name
        self.parse = statistics.median(parses)
        self.check = statistics.median(checks)
        self.default = statistics.median(defaults)
        self.eslint = statistics.median(eslints) if eslints else None
        self.fastest = (min(parses), min(checks), min(eslints) if eslints else None)
        """Per-script minimums (parse, validate, ESLint): robust when the machine is loaded."""


def measure(rounds: int, *, with_eslint: bool) -> list[Timing]:
    import keep_sdk

    parser = tree_sitter.Parser(JAVASCRIPT)
    connectors = builtin_manifest()
    policy = HostPolicy()
    rules = KeepPlugins(load_entry_points=False).rules()
    scripts = [(p, p.read_text()) for p in sorted(CORPUS.glob("*/*.js"))]
    timings: dict[Path, tuple[list[float], ...]] = {p: ([], [], [], []) for p, _ in scripts}
    for _, source in scripts:
        validate(source, connectors=connectors, policy=policy, rules=rules)
        keep_sdk.validate(source)
    eslint = Eslint([source for _, source in scripts]) if with_eslint else None
    gc.collect()
    clock = time.perf_counter
    try:
        for _ in range(rounds):
            for path, source in scripts:
                data = source.encode()
                parses, validations, defaults, _ = timings[path]
                started = clock()
                parser.parse(data)
                parses.append(clock() - started)
                started = clock()
                validate(source, connectors=connectors, policy=policy, rules=rules)
                validations.append(clock() - started)
                started = clock()
                keep_sdk.validate(source)
                defaults.append(clock() - started)
            if eslint is not None:
                for (path, _), seconds in zip(scripts, eslint.round(), strict=True):
                    timings[path][3].append(seconds)
    finally:
        if eslint is not None:
            eslint.close()
    return [Timing(f"{path.parent.name}/{path.name}", timings[path]) for path, _ in scripts]


def stages(rounds: int) -> dict[str, float]:
    """Median over the corpus of the time each stage of `analyze` takes (µs)."""
    from keep_sdk.validator.extract import extract_workflow
    from keep_sdk.validator.facts import Analysis
    from keep_sdk.validator.globals_scan import scan_globals
    from keep_sdk.validator.implicit_scan import scan_implicit_code
    from keep_sdk.validator.scope import module_scope
    from keep_sdk.validator.source import SourceText
    from keep_sdk.validator.syntax import engine_errors
    from keep_sdk.validator.walker import walk_handlers

    connectors = builtin_manifest()
    policy = HostPolicy()
    spent: dict[str, list[float]] = {}
    clock = time.perf_counter
    for path in sorted(CORPUS.glob("valid/*.js")):
        source = path.read_text()
        per_stage: dict[str, list[float]] = {}
        for _ in range(rounds):
            marks = [clock()]
            text = SourceText.parse(source)
            marks.append(clock())
            engine_errors(text)
            marks.append(clock())
            module = module_scope(text.root, text.data)
            extraction = extract_workflow(text, module, policy)
            marks.append(clock())
            analysis = Analysis(text, connectors, policy)
            analysis.handlers = extraction.handlers
            scan_globals(analysis)
            marks.append(clock())
            scan_implicit_code(analysis)
            marks.append(clock())
            walk_handlers(analysis, module)
            marks.append(clock())
            names = [
                "parse",
                "engine compile",
                "shape extraction",
                "globals scan",
                "implicit scan",
                "walk",
            ]
            for name, start, end in zip(names, marks, marks[1:], strict=False):
                per_stage.setdefault(name, []).append(end - start)
        for name, values in per_stage.items():
            spent.setdefault(name, []).append(statistics.median(values))
    return {name: statistics.median(values) * 1e6 for name, values in spent.items()}


def floors(rounds: int) -> dict[str, float]:
    """Median ratios to the bare parse of costs every design of `validate` pays.

    ``engine compile``: the QuickJS early-error compile the validator must run.
    ``visit named nodes``: reading the ``type`` of every named node once from
    Python, with no analysis at all (recursion over ``named_children``).
    """
    from keep_sdk.validator.source import SourceText
    from keep_sdk.validator.syntax import engine_errors

    parser = tree_sitter.Parser(JAVASCRIPT)

    def visit(node: tree_sitter.Node) -> None:
        for child in node.named_children:
            _ = child.type
            visit(child)

    ratios: dict[str, list[float]] = {"engine compile": [], "visit named nodes": []}
    clock = time.perf_counter
    for path in sorted(CORPUS.glob("*/*.js")):
        source = path.read_text()
        text = SourceText.parse(source)
        if text.root.has_error:
            continue
        parses: list[float] = []
        compiles: list[float] = []
        visits: list[float] = []
        for _ in range(rounds):
            started = clock()
            tree = parser.parse(text.data)
            parses.append(clock() - started)
            started = clock()
            visit(tree.root_node)
            visits.append(clock() - started)
            started = clock()
            engine_errors(text)
            compiles.append(clock() - started)
        parse = statistics.median(parses)
        ratios["engine compile"].append(statistics.median(compiles) / parse)
        ratios["visit named nodes"].append(statistics.median(visits) / parse)
    return {name: statistics.median(values) for name, values in ratios.items()}


SCALES = (1, 2, 4, 8)
_T = TypeVar("_T")
SLOPE_TARGET = 1.1


def _fastest(function: Callable[[_T], object], argument: _T, rounds: int) -> float:
    """The least CPU time of `rounds` calls ``function(argument)`` (noise only adds time)."""
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        function(argument)
        best = min(best, time.process_time() - started)
    return best


def scaling(rounds: int) -> None:
    """Print validate/parse on the corpus and the growth table of the generated shapes.

    Column `no QJS` is the slope of `validate` less the QuickJS early-error compile
    (`syntax.engine_errors`), which the sandbox pays again when it loads the script.
    """
    from keep_sdk.validator.source import SourceText
    from keep_sdk.validator.syntax import engine_errors

    parser = tree_sitter.Parser(JAVASCRIPT)
    connectors = builtin_manifest()
    policy = HostPolicy()
    rules = KeepPlugins(load_entry_points=False).rules()

    def check(source: str) -> None:
        validate(source, connectors=connectors, policy=policy, rules=rules)

    ratios = []
    for path in sorted(CORPUS.glob("*/*.js")):
        source = path.read_text()
        data = source.encode()
        parse = _fastest(parser.parse, data, rounds)
        ratios.append(_fastest(check, source, rounds) / max(parse, 1e-7))
    print(f"corpus: {len(ratios)} scripts, median validate/parse {statistics.median(ratios):.2f}")
    print(
        f"\n{'shape':26} {'n':>5} {'KB 8n':>7}"
        + "".join(f" {f'{k}x ms':>9}" for k in SCALES)
        + f" {'v/p 8n':>7} {'slope':>6} {'no QJS':>7}"
    )
    worst = worst_analysis = 0.0
    for name, (generate, size) in SHAPES.items():
        times: list[float] = []
        engine: list[float] = []
        source = ""
        for scale in SCALES:
            source = generate(size * scale)
            check(source)
            times.append(_fastest(check, source, rounds))
            parsed = SourceText.parse(source)
            engine.append(_fastest(engine_errors, parsed, rounds))
        data = source.encode()
        parse = _fastest(parser.parse, data, rounds)
        slope = times[-1] / (SCALES[-1] * times[0])
        analysis = (times[-1] - engine[-1]) / (SCALES[-1] * (times[0] - engine[0]))
        worst = max(worst, slope)
        worst_analysis = max(worst_analysis, analysis)
        print(
            f"{name:26} {size:5d} {len(data) / 1024:7.1f}"
            + "".join(f" {t * 1e3:9.2f}" for t in times)
            + f" {times[-1] / parse:7.1f} {slope:6.2f} {analysis:7.2f}"
        )
    verdict = "met" if worst <= SLOPE_TARGET else "missed"
    print(f"\nworst slope time(8n)/(8*time(n)): {worst:.2f} (target <= {SLOPE_TARGET}: {verdict})")
    print(
        f"worst slope without the QuickJS early-error compile (column `no QJS`): "
        f"{worst_analysis:.2f}"
    )


def _fuzz_input(rng: random.Random, sources: list[str]) -> str:
    kind = rng.random()
    if kind < 0.1:
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(400))).decode(
            "utf-8", "surrogateescape"
        )
    if kind < 0.2:
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(200)))
    source = rng.choice(sources)
    for _ in range(rng.randrange(1, 6)):
        roll = rng.random()
        if roll < 0.5:
            piece = rng.choice(HAZARDS)
        elif roll < 0.7:
            piece = rng.choice(("(", "[", "{a: ", "a?.b(", "() => ", "`${")) * rng.randrange(1, 400)
        elif roll < 0.8:
            piece = rng.choice((" ?? a", " + a", ".b", ".b()", ", a")) * rng.randrange(1, 2000)
        else:
            piece = "".join(chr(rng.randrange(0x30000)) for _ in range(rng.randrange(1, 8)))
        at = rng.randrange(len(source) + 1)
        if rng.random() < 0.2:
            end = min(len(source), at + rng.randrange(80))
            source = source[:at] + source[end:]
        source = source[:at] + piece + source[at:]
    return source


def fuzz(count: int, seed: int, out: Path) -> int:
    """Validate `count` generated inputs; the number that raised."""
    rng = random.Random(seed)
    sources = [p.read_text() for p in sorted(CORPUS.glob("*/*.js"))]
    failures = 0
    slowest = (0.0, 0)
    started = time.monotonic()
    for index in range(count):
        source = _fuzz_input(rng, sources)
        begin = time.process_time()
        try:
            validate(source)
        except Exception:
            failures += 1
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"raised-{seed}-{index}.json"
            path.write_text(json.dumps({"source": source, "error": traceback.format_exc()}))
            print(f"input {index} raised; written to {path}")
        per_kb = (time.process_time() - begin) / max(len(source) / 1024, 1)
        if per_kb > slowest[0]:
            slowest = (per_kb, index)
        if (index + 1) % 10_000 == 0:
            rate = (index + 1) / (time.monotonic() - started)
            print(f"{index + 1} inputs, {failures} raised, {rate:.0f}/s", flush=True)
    print(
        f"fuzz: {count} inputs (seed {seed}), {failures} raised; slowest "
        f"{slowest[0] * 1e3:.1f} ms per KB (input {slowest[1]})"
    )
    return failures


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--rounds", type=int, default=60)
    options.add_argument("--no-eslint", action="store_true", help="skip the ESLint comparison")
    options.add_argument("--scaling", action="store_true", help="growth with input size")
    options.add_argument("--fuzz", type=int, metavar="N", help="validate N generated inputs")
    options.add_argument("--seed", type=int, default=0, help="the fuzz run's random seed")
    options.add_argument("--fuzz-out", type=Path, default=Path("fuzz-failures"))
    arguments = options.parse_args()
    rounds = arguments.rounds
    if arguments.fuzz is not None:
        raise SystemExit(1 if fuzz(arguments.fuzz, arguments.seed, arguments.fuzz_out) else 0)
    if arguments.scaling:
        scaling(min(rounds, 5))
        return
    with_eslint = not arguments.no_eslint and Eslint.available()
    results = measure(rounds, with_eslint=with_eslint)
    print(
        f"{'script':44} {'bytes':>6} {'parse µs':>9} {'validate µs':>12} {'ratio':>6}"
        f" {'default µs':>11} {'eslint µs':>10} {'x faster':>9}"
    )
    for t in results:
        size = (CORPUS / t.name).stat().st_size
        eslint = f"{t.eslint * 1e6:10.0f} {t.eslint / t.check:9.2f}" if t.eslint else ""
        print(
            f"{t.name:44} {size:6d} {t.parse * 1e6:9.0f} {t.check * 1e6:12.0f}"
            f" {t.check / t.parse:6.2f} {t.default * 1e6:11.0f} {eslint}"
        )
    ratios = [t.check / t.parse for t in results]
    median_validate = statistics.median(t.check for t in results)
    overall = sum(t.check for t in results) / sum(t.parse for t in results)
    median_ratio = statistics.median(ratios)
    default_ratio = statistics.median(t.default / t.check for t in results)
    print(f"\nscripts: {len(results)}, rounds: {rounds}")
    print(f"median validate time per script: {median_validate * 1e6:.0f} µs")
    print(f"median ratio validate/parse: {median_ratio:.2f} (target <= {TARGET:.1f})")
    print(f"ratio of summed medians: {overall:.2f}; worst script: {max(ratios):.2f}")
    print(f"median ratio keep_sdk.validate(source) / prebuilt registries: {default_ratio:.2f}")
    if with_eslint:
        speedups = [t.eslint / t.check for t in results if t.eslint is not None]
        summed = sum(t.eslint for t in results if t.eslint is not None) / sum(
            t.check for t in results
        )
        print(
            f"median ESLint 9 (12 rules, warm) / validate: {statistics.median(speedups):.2f}"
            f" (target >= {ESLINT_TARGET:.1f}); ratio of summed medians: {summed:.2f}"
        )
    fastest_parse = statistics.median(t.fastest[1] / t.fastest[0] for t in results)
    print(
        f"with per-script minimums instead of medians: validate/parse {fastest_parse:.2f}", end=""
    )
    if with_eslint:
        fastest_eslint = statistics.median(
            t.fastest[2] / t.fastest[1] for t in results if t.fastest[2] is not None
        )
        print(f", ESLint/validate {fastest_eslint:.2f}", end="")
    print()
    if not with_eslint:
        print("ESLint comparison skipped: run `npm install` in benchmarks/eslint (needs node)")
    print("\nmedian µs per stage over the valid scripts:")
    for name, micros in stages(max(rounds // 2, 5)).items():
        print(f"  {name:18} {micros:7.0f}")
    print("\nfloors, median ratio to the parse (paid by any design; see `floors`):")
    for name, ratio in floors(max(rounds // 2, 5)).items():
        print(f"  {name:18} {ratio:7.2f}")


if __name__ == "__main__":
    main()
