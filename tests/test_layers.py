"""The import graph of keep_sdk follows the layers of docs/architecture.md, with no cycle.

Every ``import`` in the package counts, wherever it is written (module level,
inside a function, under ``TYPE_CHECKING``): a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "keep_sdk"

ALLOWED: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "model": frozenset(),
    "contract": frozenset({"errors", "model"}),
    "connectors": frozenset({"errors", "model", "contract"}),
    "stores": frozenset({"errors", "model", "contract"}),
    "validator": frozenset({"model", "contract"}),
    "sandbox": frozenset({"errors", "model", "contract"}),
    "workflow": frozenset({"errors", "model", "contract", "validator"}),
    "config": frozenset({"errors", "model", "connectors"}),
    "plugins": frozenset(
        {"errors", "model", "contract", "connectors", "stores", "validator", "workflow"}
    ),
    "runtime": frozenset({"errors", "model", "contract", "connectors", "stores", "sandbox"}),
    "scheduler": frozenset({"errors", "model", "contract", "stores", "runtime"}),
    "status": frozenset({"model", "stores", "runtime"}),
    "app": frozenset(
        {
            *("errors", "model", "contract", "connectors", "stores", "sandbox"),
            *("config", "plugins", "runtime", "scheduler", "status"),
        }
    ),
    "telemetry": frozenset({"errors", "model", "contract", "stores", "plugins"}),
    "console": frozenset(
        {"errors", "model", "contract", "stores", "runtime", "status", "app", "telemetry"}
    ),
    "cases": frozenset(
        {
            *("errors", "model", "contract", "connectors", "stores"),
            *("config", "plugins", "runtime", "scheduler", "app"),
        }
    ),
    "repair": frozenset(
        {
            *("errors", "model", "contract", "stores", "validator", "sandbox"),
            *("config", "plugins", "runtime", "cases"),
        }
    ),
    "conformance": frozenset(
        {"errors", "model", "contract", "stores", "config", "plugins", "app", "cases"}
    ),
    "cli": frozenset(
        {
            *("errors", "model", "contract", "connectors", "stores", "validator"),
            *("config", "plugins", "runtime", "scheduler", "status", "app"),
            *("console", "repair", "conformance", "cases", "mcp_server", "telemetry"),
        }
    ),
    "mcp_server": frozenset(
        {
            *("errors", "model", "contract", "validator", "config"),
            *("plugins", "runtime", "status", "app", "repair", "cases"),
        }
    ),
    "__init__": frozenset({"errors", "validator", "plugins", "runtime", "scheduler", "app"}),
    "__main__": frozenset({"cli"}),
}
"""Layer → the layers it may import: exactly the arrows of docs/architecture.md (its table's
"imports" column), each used by at least one import unless `NOT_YET_USED` says why not.
``app`` (the composition root, `Installation`) sits above plugins, config, the scheduler,
the status read model and the runtime, and below the console, repair, conformance and
the command line."""

NOT_YET_USED: dict[tuple[str, str], str] = {}
"""Arrows the architecture draws that no import uses yet, and why they are drawn."""

MIN_MODULES = 200
MIN_EDGES = 1000
"""The walk finds at least this many modules and imports between them (249 and 1238 when
written), so a walk that silently finds nothing fails."""

ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"

ONLY_IN_CLI = ("click", "rich")
"""Third-party packages only the command line imports."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = frozenset(_module_name(p) for p in PACKAGE.rglob("*.py"))


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute name) of every import in `path`: ``from a import b`` yields ``a.b``
    when that is a module, else ``a``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield node.lineno, submodule if submodule in MODULES else target


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _type_only_lines(path: Path) -> set[int]:
    """Lines of the imports under ``if TYPE_CHECKING:`` (never executed)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        lines.add(sub.lineno)
    return lines


def _graph(*, runtime_only: bool = False) -> dict[str, dict[str, int]]:
    """Module → {imported keep_sdk module: line}. Names imported from a module count as it.

    `runtime_only` leaves out imports under ``TYPE_CHECKING`` (type-only references may
    point both ways between two modules; executed imports may not)."""
    sources = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, dict[str, int]] = defaultdict(dict)
    for module, path in sources.items():
        skip = _type_only_lines(path) if runtime_only else set()
        for line, target in _imports(path):
            if target in sources and target != module and line not in skip:
                edges[module].setdefault(target, line)
    return edges


GRAPH = _graph()


def _layers(graph: dict[str, dict[str, int]]) -> dict[str, set[str]]:
    """Layer → the other layers its modules import."""
    arrows: dict[str, set[str]] = defaultdict(set)
    for module, deps in graph.items():
        for target in deps:
            if _layer(target) != _layer(module):
                arrows[_layer(module)].add(_layer(target))
    return arrows


def _documented() -> dict[str, frozenset[str]]:
    """The table of docs/architecture.md: package → the packages its "imports" cell names."""
    table: dict[str, frozenset[str]] = {}
    for row in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if not row.startswith("| `") or len(cells) != 4:
            continue
        names = [re.sub(r"(/|\.py)$", "", n) for n in re.findall(r"`([^`]+)`", cells[0])[:1]]
        imports = re.findall(r"`([^`]+)`", cells[3])
        table[names[0]] = frozenset(re.sub(r"(/|\.py)$", "", n) for n in imports)
    return table


def test_the_walk_finds_the_package() -> None:
    edges = sum(len(deps) for deps in GRAPH.values())
    assert len(GRAPH) >= MIN_MODULES, f"the walk found {len(GRAPH)} modules importing others"
    assert edges >= MIN_EDGES, f"the walk found {edges} imports between modules"


def test_the_layers_cover_every_package() -> None:
    layers = {_layer(m) for m in GRAPH} | {_layer(t) for deps in GRAPH.values() for t in deps}
    assert layers <= set(ALLOWED), (
        f"add these to ALLOWED and docs/architecture.md: {layers - set(ALLOWED)}"
    )


def test_every_package_of_the_architecture_exists() -> None:
    documented = _documented()
    assert set(documented) == set(ALLOWED)
    for name in documented:
        assert (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file(), name


def test_the_architecture_draws_exactly_the_allowed_arrows() -> None:
    documented = _documented()
    wrong = {
        name: (sorted(documented.get(name, frozenset())), sorted(allowed))
        for name, allowed in ALLOWED.items()
        if documented.get(name) != allowed
    }
    assert not wrong, "docs/architecture.md (doc, test) differ:\n" + "\n".join(
        f"{name}: {pair}" for name, pair in sorted(wrong.items())
    )


def test_every_allowed_arrow_is_used() -> None:
    used = _layers(GRAPH)
    drawn = {(source, target) for source, targets in ALLOWED.items() for target in targets}
    unused = sorted(arrow for arrow in drawn if arrow[1] not in used.get(arrow[0], set()))
    assert sorted(set(unused) - set(NOT_YET_USED)) == [], (
        "no import uses these arrows: take them out of ALLOWED and docs/architecture.md"
    )
    now_used = sorted(set(NOT_YET_USED) - set(unused))
    assert now_used == [], "these arrows are used now: take them out of NOT_YET_USED"
    assert set(NOT_YET_USED) <= drawn


def test_imports_follow_the_layers() -> None:
    wrong = sorted(
        f"{module}:{line} imports {target}"
        for module, deps in GRAPH.items()
        for target, line in deps.items()
        if _layer(target) != _layer(module) and _layer(target) not in ALLOWED[_layer(module)]
    )
    assert not wrong, "imports against the layers (docs/architecture.md):\n" + "\n".join(wrong)


def test_only_the_command_line_imports_click_and_rich() -> None:
    wrong = sorted(
        f"{_module_name(path)}:{line} imports {target}"
        for path in PACKAGE.rglob("*.py")
        if _layer(_module_name(path)) != "cli"
        for line, target in _imports(path)
        if target.split(".")[0] in ONLY_IN_CLI
    )
    assert not wrong, "\n".join(wrong)


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(_graph(runtime_only=True)) == []


def test_no_import_cycle_between_packages() -> None:
    layers = {source: dict.fromkeys(targets, 0) for source, targets in _layers(GRAPH).items()}
    assert _cycles(layers) == []


def test_no_cycle_in_the_allowed_arrows() -> None:
    assert _cycles({s: dict.fromkeys(t, 0) for s, t in ALLOWED.items()}) == []


@pytest.mark.parametrize(
    ("graph", "cycles"),
    [
        ({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}, [["a", "b", "c"]]),
        ({"a": {"b": 1}, "b": {"c": 1}}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(
    graph: dict[str, dict[str, int]], cycles: list[list[str]]
) -> None:
    assert _cycles(graph) == cycles
