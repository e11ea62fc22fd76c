"""The stores facade: the built-in stores satisfy the protocol, documented, importable."""

from __future__ import annotations


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
