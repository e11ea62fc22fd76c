"""The stores and conformance facades: sorted __all__, every name importable and listed."""

from __future__ import annotations

import importlib
import inspect

import pytest

FACADES = [
    "keep_sdk.stores",
    "keep_sdk.stores.sql",
    "keep_sdk.conformance",
    "keep_sdk.conformance.stores",
    "keep_sdk.conformance.support",
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
        and name != "annotations"
    }
    assert public <= set(module.__all__), f"not in __all__: {sorted(public - set(module.__all__))}"


def test_the_built_in_stores_satisfy_the_protocol(tmp_path) -> None:
    from keep_sdk.stores import (
        MemoryStore,
        SqlStore,
        Store,
        SupportsBulkLoad,
        SupportsFaultInjection,
        SupportsPeekCost,
    )

    sql = SqlStore(f"sqlite:///{tmp_path}/k.db")
    try:
        for store in (MemoryStore(), sql):
            for protocol in (Store, SupportsBulkLoad, SupportsFaultInjection, SupportsPeekCost):
                assert isinstance(store, protocol), (type(store).__name__, protocol.__name__)
    finally:
        sql.close()


def test_every_protocol_method_is_documented() -> None:
    from keep_sdk.stores import Store

    methods = [n for n, v in vars(Store).items() if callable(v) and not n.startswith("_")]
    assert len(methods) > 40
    undocumented = [n for n in methods if not (getattr(Store, n).__doc__ or "").strip()]
    assert undocumented == []


def test_the_cli_and_the_conformance_tools_import_without_pytest() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['pytest'] = None\n"
        "import keep_sdk.cli\n"
        "from keep_sdk.conformance import FaultInjector, ManualClock, PostgresServer\n"
        "from keep_sdk.stores import open_store\n"
        "open_store('memory://').close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
