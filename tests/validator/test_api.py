"""The public facade of keep_sdk.validator: sorted, importable, complete."""

from __future__ import annotations

import importlib
import inspect

import keep_sdk.validator as validator

SUBMODULES = ("diagnostics", "engine", "facts", "render", "rule", "source")


def test_all_is_sorted_and_importable() -> None:
    assert validator.__all__ == sorted(validator.__all__)
    for name in validator.__all__:
        assert hasattr(validator, name), name


def test_every_public_name_of_the_facade_is_listed() -> None:
    public = {
        name
        for name, value in vars(validator).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(validator.__all__)


def test_submodule_all_lists_are_sorted_and_exist() -> None:
    for name in SUBMODULES:
        module = importlib.import_module(f"keep_sdk.validator.{name}")
        assert module.__all__ == sorted(module.__all__), name
        for exported in module.__all__:
            assert hasattr(module, exported), f"{name}.{exported}"
