"""Every facade and module of keep_sdk: a sorted __all__ that imports, and a lazy root.

The one facade test for the whole package (each package's ``__init__`` and each
module that declares ``__all__`` is found by walking the source tree, so a new
package is covered without editing this file).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from types import ModuleType

import pytest

import keep_sdk


def _modules() -> list[str]:
    found = ["keep_sdk"]
    for info in pkgutil.walk_packages(keep_sdk.__path__, "keep_sdk."):
        if info.name in ("keep_sdk.__main__", "keep_sdk.conformance.stores._child"):
            continue
        found.append(info.name)
    return sorted(found)


MODULES = _modules()
PACKAGES = [name for name in MODULES if hasattr(importlib.import_module(name), "__path__")]


def _isort_key(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[0].isupper() else 2), name


def _public_names(module: ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", module.__name__).startswith("keep_sdk")
        and name not in {"annotations", "TYPE_CHECKING"}
    }


@pytest.mark.parametrize("module_name", MODULES)
def test_all_is_sorted_unique_and_importable(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = list(getattr(module, "__all__", []))
    assert len(names) == len(set(names)), f"{module_name}.__all__ repeats a name"
    assert names in (sorted(names), sorted(names, key=_isort_key)), f"{module_name} unsorted"
    for name in names:
        assert hasattr(module, name), f"{module_name}.{name} is in __all__ but missing"


@pytest.mark.parametrize("module_name", PACKAGES)
def test_every_public_name_of_a_package_is_listed(module_name: str) -> None:
    module = importlib.import_module(module_name)
    public = _public_names(module) - {"keep_sdk"}
    missing = sorted(public - set(getattr(module, "__all__", [])))
    assert not missing, f"{module_name}: not in __all__: {missing}"


def test_the_root_exports_the_api_and_every_error() -> None:
    from keep_sdk import errors

    api = {
        "Diagnostic",
        "Installation",
        "PersonActions",
        "Report",
        "Runtime",
        "Scheduler",
        "hookimpl",
        "load_workflow",
        "open_store",
        "validate",
    }
    assert api | set(errors.__all__) == set(keep_sdk.__all__)
    assert keep_sdk.__version__[0].isdigit()
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        keep_sdk.nothing  # noqa: B018


def test_importing_the_root_loads_no_dependency() -> None:
    heavy = ("pydantic", "pluggy", "tree_sitter", "sqlalchemy", "quickjs", "click", "rich")
    probe = (
        "import sys, keep_sdk; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r} "
        "or (m.startswith('keep_sdk.') and m != 'keep_sdk.errors')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]"


def test_validate_at_the_root_uses_the_installed_plugins() -> None:
    from keep_sdk.plugins import default_plugins

    source = (
        'export default Keep.workflow({ name: "x", topics: {}, producers: {}, consumers: {} });'
    )
    assert keep_sdk.validate(source) == default_plugins().validate(source)
