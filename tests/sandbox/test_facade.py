"""The public facade of keep_sdk.sandbox."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import keep_sdk.sandbox as sandbox


def test_all_is_sorted_and_unique() -> None:
    assert list(sandbox.__all__) == sorted(set(sandbox.__all__))


def test_every_name_in_all_is_importable() -> None:
    for name in sandbox.__all__:
        assert getattr(sandbox, name) is not None, name


def test_every_public_symbol_is_listed() -> None:
    public = {
        name
        for name, value in vars(sandbox).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(sandbox.__all__)


def _isort_key(name: str) -> tuple[int, str]:
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


def test_submodules_declare_sorted_all() -> None:
    for module_info in pkgutil.iter_modules(sandbox.__path__):
        module = importlib.import_module(f"keep_sdk.sandbox.{module_info.name}")
        names = list(getattr(module, "__all__", []))
        assert names == sorted(names, key=_isort_key), module_info.name
        for name in names:
            assert hasattr(module, name), f"{module_info.name}.{name}"


def test_the_prelude_ships_as_package_data() -> None:
    from importlib import resources

    text = resources.files("keep_sdk.sandbox").joinpath("prelude.js").read_text("utf-8")
    assert "function boot" in text
