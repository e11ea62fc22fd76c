"""Imports flow one way: ``cli → app → (plugins, scheduler)``, ``scheduler → runtime → …``.

Every import statement counts, also those inside functions: a lazy import is
still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "keep_sdk"

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "keep_sdk.scheduler": (
        "keep_sdk.app",
        "keep_sdk.cli",
        "keep_sdk.connectors.builtin",
        "keep_sdk.sandbox",
        "keep_sdk.validator",
    ),
    "keep_sdk.runtime": ("keep_sdk.app", "keep_sdk.cli", "keep_sdk.scheduler"),
    "keep_sdk.app": ("keep_sdk.cli",),
}
"""Packages (or modules) and what none of their modules may import."""

UI_LIBRARIES = ("click", "rich")
"""Imported by `keep_sdk.cli` only."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


MODULES = {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(layer: str) -> None:
    wrong = sorted(
        f"{module} imports {name}"
        for module, names in MODULES.items()
        if _within(module, layer)
        for name in names
        if any(_within(name, banned) for banned in FORBIDDEN[layer])
    )
    assert wrong == []


def test_only_the_cli_imports_click_and_rich() -> None:
    wrong = sorted(
        f"{module} imports {name}"
        for module, names in MODULES.items()
        if not _within(module, "keep_sdk.cli")
        for name in names
        if any(_within(name, library) for library in UI_LIBRARIES)
    )
    assert wrong == []


def test_only_the_entry_points_import_the_cli() -> None:
    importers = sorted(
        module
        for module, names in MODULES.items()
        if not _within(module, "keep_sdk.cli") and any(_within(n, "keep_sdk.cli") for n in names)
    )
    assert importers == ["keep_sdk.__main__"]


def test_the_scan_sees_the_packages() -> None:
    assert "keep_sdk.cli.group" in MODULES
    assert "keep_sdk.app" in MODULES
    assert any(_within(name, "click") for name in MODULES["keep_sdk.cli.group"])
