"""Validator speed over the fixture corpus, as a ratio to a bare tree-sitter parse.

Run: ``python benchmarks/validator.py [--rounds N]``

For every script in ``fixtures/workflows`` it measures, interleaved in the
same rounds, ``tree_sitter.Parser.parse`` of the script's bytes (the
baseline) and ``keep_sdk.validator.validate`` of the script (parse, QuickJS
early-error compile, shape extraction, analysis, every rule, the report). It
prints the median of each per script, the median ratio over the corpus and
the ratio of the summed medians. Target: the median ratio is at most 3.
It then prints where the time goes per stage, and the floors every design
pays (`floors`): the QuickJS compile and one Python visit of every named node.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path

import tree_sitter

from keep_sdk.connectors import builtin_manifest
from keep_sdk.model import HostPolicy
from keep_sdk.plugins import KeepPlugins
from keep_sdk.validator import validate
from keep_sdk.validator.source import JAVASCRIPT

CORPUS = Path(__file__).parents[1] / "fixtures" / "workflows"
TARGET = 3.0


def measure(rounds: int) -> list[tuple[str, float, float]]:
    parser = tree_sitter.Parser(JAVASCRIPT)
    connectors = builtin_manifest()
    policy = HostPolicy()
    rules = KeepPlugins(load_entry_points=False).rules()
    scripts = [(p, p.read_text()) for p in sorted(CORPUS.glob("*/*.js"))]
    timings: dict[Path, tuple[list[float], list[float]]] = {p: ([], []) for p, _ in scripts}
    for _, source in scripts:
        validate(source, connectors=connectors, policy=policy, rules=rules)
    gc.collect()
    clock = time.perf_counter
    for _ in range(rounds):
        for path, source in scripts:
            data = source.encode()
            parses, validations = timings[path]
            started = clock()
            parser.parse(data)
            parses.append(clock() - started)
            started = clock()
            validate(source, connectors=connectors, policy=policy, rules=rules)
            validations.append(clock() - started)
    return [
        (
            f"{path.parent.name}/{path.name}",
            statistics.median(timings[path][0]),
            statistics.median(timings[path][1]),
        )
        for path, _ in scripts
    ]


def stages(rounds: int) -> dict[str, float]:
    """Median over the corpus of the time each stage of `analyze` takes (µs)."""
    from keep_sdk.validator.extract import extract_workflow
    from keep_sdk.validator.facts import Analysis
    from keep_sdk.validator.globals_scan import scan_globals
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
            walk_handlers(analysis, module)
            marks.append(clock())
            names = ["parse", "engine compile", "shape extraction", "globals scan", "walk"]
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


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--rounds", type=int, default=60)
    rounds = options.parse_args().rounds
    results = measure(rounds)
    print(f"{'script':48} {'bytes':>7} {'parse µs':>9} {'validate µs':>12} {'ratio':>6}")
    for name, parse, check in results:
        size = (CORPUS / name).stat().st_size
        print(f"{name:48} {size:7d} {parse * 1e6:9.0f} {check * 1e6:12.0f} {check / parse:6.2f}")
    ratios = [check / parse for _, parse, check in results]
    median_validate = statistics.median(check for _, _, check in results)
    overall = sum(c for _, _, c in results) / sum(p for _, p, _ in results)
    median_ratio = statistics.median(ratios)
    print(f"\nscripts: {len(results)}, rounds: {rounds}")
    print(f"median validate time per script: {median_validate * 1e6:.0f} µs")
    print(f"median ratio validate/parse: {median_ratio:.2f} (target <= {TARGET:.1f})")
    print(f"ratio of summed medians: {overall:.2f}; worst script: {max(ratios):.2f}")
    print("\nmedian µs per stage over the valid scripts:")
    for name, micros in stages(max(rounds // 2, 5)).items():
        print(f"  {name:18} {micros:7.0f}")
    print("\nfloors, median ratio to the parse (paid by any design; see `floors`):")
    for name, ratio in floors(max(rounds // 2, 5)).items():
        print(f"  {name:18} {ratio:7.2f}")


if __name__ == "__main__":
    main()
