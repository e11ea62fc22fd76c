"""The facade of keep_sdk.scheduler."""

from __future__ import annotations

import inspect

import keep_sdk.scheduler as facade
from keep_sdk.scheduler import _leases, _planner, _scheduler, _tasks


def test_all_is_sorted_and_importable() -> None:
    assert facade.__all__ == sorted(facade.__all__)
    for name in facade.__all__:
        assert getattr(facade, name) is not None


def test_every_public_name_of_the_core_modules_is_exported() -> None:
    exported = set(facade.__all__)
    for module in (_leases, _planner, _scheduler, _tasks):
        assert set(module.__all__) <= exported, module.__name__


def test_every_public_name_of_the_facade_is_listed() -> None:
    public = {
        name
        for name, value in vars(facade).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", facade.__name__).startswith("keep_sdk")
    }
    assert public <= set(facade.__all__), sorted(public - set(facade.__all__))
