"""Every package's facade: a sorted __all__ whose names all import."""

import importlib
import inspect

import pytest

FACADES = [
    "keep_sdk",
    "keep_sdk.cli",
    "keep_sdk.conformance",
    "keep_sdk.conformance.scenarios",
    "keep_sdk.conformance.stores",
    "keep_sdk.conformance.support",
    "keep_sdk.connectors",
    "keep_sdk.connectors.builtin",
    "keep_sdk.errors",
    "keep_sdk.model",
    "keep_sdk.plugins",
    "keep_sdk.runtime",
    "keep_sdk.sandbox",
    "keep_sdk.scheduler",
    "keep_sdk.stores",
    "keep_sdk.stores.sql",
    "keep_sdk.validator",
]


@pytest.mark.parametrize("module_name", FACADES)
def test_all_is_sorted_and_importable(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__all__ == sorted(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), f"{module_name}.{name} is in __all__ but missing"


@pytest.mark.parametrize("module_name", FACADES)
def test_every_public_name_is_listed(module_name: str) -> None:
    module = importlib.import_module(module_name)
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", module_name).startswith("keep_sdk")
        and name not in {"annotations", "TYPE_CHECKING"}
    }
    assert public <= set(module.__all__), f"not in __all__: {sorted(public - set(module.__all__))}"


def test_facade_exports_every_error() -> None:
    import keep_sdk
    from keep_sdk import errors

    assert set(errors.__all__) <= set(keep_sdk.__all__)


def test_version_comes_from_the_distribution() -> None:
    import keep_sdk

    assert keep_sdk.__version__[0].isdigit()
