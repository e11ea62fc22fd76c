"""The MCP connector against hostile servers: huge results, garbage lines, hangs, and tool
names that are JS object internals."""

from __future__ import annotations

import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from keep_sdk.connectors.mcp import McpSettings, McpToolSettings, build
from keep_sdk.connectors.mcp.tools import RESERVED_JS_NAMES
from keep_sdk.errors import ConfigurationError, PreconditionFailed, TransientError
from tests.connectors.mcp.servers import http_server

HOSTILE = Path(__file__).with_name("hostile_server.py")
CAP = 256 * 1024


def hostile(*flags: str, **options: object) -> McpSettings:
    """Settings that start the hostile stdio server with `flags`."""
    return McpSettings(
        command=sys.executable,
        args=[str(HOSTILE), *flags],
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture
def huge_http(tmp_path: Path) -> Iterator[str]:
    with http_server(tmp_path / "notes.json", variant="huge") as url:
        yield url


def test_a_stdio_result_past_the_cap_fails_the_read_without_holding_it() -> None:
    size = 32 * 1024 * 1024
    with build("svc", hostile("--huge-bytes", str(size), max_result_bytes=CAP)) as svc:
        tracemalloc.start()
        try:
            with pytest.raises(PreconditionFailed, match="max_result_bytes") as caught:
                svc.invoke("lookup", {})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert f"({CAP})" in str(caught.value)
        assert peak < 8 * CAP + 2 * 1024 * 1024


def test_a_result_under_the_cap_still_arrives_after_a_refused_one() -> None:
    settings = hostile("--huge-bytes", str(CAP // 2), max_result_bytes=CAP)
    with build("svc", settings) as svc:
        result = svc.invoke("lookup", {})
    assert isinstance(result, str)
    assert len(result) == CAP // 2


def test_an_http_result_past_the_cap_fails_the_read_without_holding_it(huge_http: str) -> None:
    with build("svc", McpSettings(url=huge_http, max_result_bytes=CAP)) as svc:
        assert svc.invoke("dump", {"size": 1000}) == {"result": "x" * 1000}
        tracemalloc.start()
        try:
            with pytest.raises(PreconditionFailed, match="max_result_bytes"):
                svc.invoke("dump", {"size": 16 * 1024 * 1024})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 8 * CAP + 2 * 1024 * 1024
        assert svc.invoke("dump", {"size": 10}) == {"result": "x" * 10}


def test_a_garbage_line_is_skipped_without_a_traceback(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with build("svc", hostile("--garbage")) as svc:
        assert svc.invoke("lookup", {}) == {"found": True}
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert "not JSON-RPC" not in out + err


def test_call_timeout_bounds_the_whole_call() -> None:
    with build("svc", hostile("--hang-s", "30", call_timeout_s=1.0)) as svc:
        started = time.monotonic()
        with pytest.raises(TransientError, match="no answer within 1s"):
            svc.invoke("lookup", {})
        assert time.monotonic() - started < 5


def test_a_tool_named_after_a_js_object_internal_is_refused_with_the_override_to_set() -> None:
    with pytest.raises(ConfigurationError) as caught:
        build("svc", hostile("--collide"))
    message = str(caught.value)
    assert "'hasOwnProperty'" in message
    assert "JS object internal" in message
    assert '[connectors.svc.tools.hasOwnProperty]` `name = "hasOwnPropertyTool"' in message


def test_the_override_maps_a_colliding_tool_to_a_usable_name() -> None:
    tools = {"hasOwnProperty": McpToolSettings(name="ownProperty")}
    with build("svc", hostile("--collide", tools=tools)) as svc:
        assert svc.invoke("ownProperty", {}) == {"found": True}


@pytest.mark.parametrize("name", sorted(n for n in RESERVED_JS_NAMES if n[:1].islower()))
def test_an_override_to_a_reserved_name_is_refused(name: str) -> None:
    tools = {"lookup": McpToolSettings(name=name)}
    with pytest.raises(ConfigurationError, match="JS object internal"):
        build("svc", hostile(tools=tools))
