"""The import graph of keep_sdk follows the layers of docs/architecture.md, with no cycle.

Every ``import`` in the package counts, wherever it is written (module level,
inside a function, under ``TYPE_CHECKING``): a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "keep_sdk"

SHARED = frozenset({"errors", "model", "contract"})
"""What every layer may import."""

BELOW_PLUGINS = frozenset({"connectors", "stores", "validator", "sandbox"})
EVERYTHING = frozenset(
    {
        *SHARED,
        *BELOW_PLUGINS,
        "workflow",
        "config",
        "plugins",
        "runtime",
        "scheduler",
        "app",
        "conformance",
        "console",
        "repair",
        "cli",
    }
)

ALLOWED: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "model": frozenset({"errors"}),
    "contract": frozenset({"errors", "model"}),
    "connectors": SHARED,
    "stores": SHARED,
    "validator": SHARED,
    "sandbox": SHARED,
    "workflow": SHARED | {"validator"},
    "config": SHARED | {"connectors"},
    "plugins": SHARED | {"connectors", "stores", "validator", "workflow"},
    "runtime": SHARED | {"sandbox", "stores", "connectors"},
    "scheduler": SHARED | {"runtime", "stores"},
    "console": EVERYTHING - {"cli", "console", "conformance"},
    "repair": EVERYTHING - {"cli", "console", "conformance", "repair", "app", "config"},
    "app": EVERYTHING - {"cli", "app", "conformance"},
    "conformance": EVERYTHING - {"cli", "conformance"},
    "cli": EVERYTHING - {"cli"},
    "__init__": EVERYTHING - {"cli", "conformance"},
    "__main__": frozenset({"cli"}),
}
"""Layer → the layers it may import. Read as arrows: cli → app → (plugins, scheduler);
plugins → (connectors, stores, validator); scheduler → runtime → (sandbox, stores,
connectors); everything → (model, errors, contract)."""

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


def test_the_layers_cover_every_package() -> None:
    layers = {_layer(m) for m in GRAPH} | {_layer(t) for deps in GRAPH.values() for t in deps}
    assert layers <= set(ALLOWED), (
        f"add these to ALLOWED and docs/architecture.md: {layers - set(ALLOWED)}"
    )


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
    layers: dict[str, dict[str, int]] = defaultdict(dict)
    for module, deps in GRAPH.items():
        for target in deps:
            if _layer(target) != _layer(module):
                layers[_layer(module)][_layer(target)] = 0
    assert _cycles(layers) == []


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
