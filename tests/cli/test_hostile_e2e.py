"""Hostile services on 127.0.0.1 through the real CLI (`keep run --until-idle` as a process):
the host's peak memory stays within the configured caps, every run ends, no traceback is
printed, and the planted secret appears in no output and no store file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from keep_sdk.model import RunStatus
from keep_sdk.stores import open_store
from tests.connectors.test_hostile_http import flood, gzip_bomb

KEEP = [sys.executable, "-m", "keep_sdk"]
TOKEN = "e2e-planted-Secret-7c1f9a"
CAP = 1024 * 1024
HOSTILE_MCP = Path(__file__).parents[1] / "connectors" / "mcp" / "hostile_server.py"

MEASURE = textwrap.dedent(
    """
    import resource, subprocess, sys
    done = subprocess.run(sys.argv[2:])
    with open(sys.argv[1], "w") as out:
        out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
    sys.exit(done.returncode)
    """
)

READER = """
export default Keep.workflow({{
  name: "hostile",
  topics: {{ "seen": {{}} }},
  producers: {{
    poll: {{
      schedule: {{ interval: "1h" }},
      handler: async (ctx, state) => {{
        const answer = await ctx.{call};
        return {{ got: typeof answer }};
      }},
    }},
  }},
}});
"""

HTTP_TOML = """
[connectors.svc]
type = "http"
base_url = "{url}"
headers = {{ Authorization = "Bearer ${{SVC_TOKEN}}" }}
max_response_bytes = {cap}
timeout_s = 60

[connectors.svc.operations.fetch]
kind = "read"
path = "/anything"
"""

MCP_TOML = """
[connectors.svc]
type = "mcp"
command = "{python}"
args = [{args}]
env = {{ SVC_TOKEN = "${{SVC_TOKEN}}" }}
max_result_bytes = {cap}
call_timeout_s = 5
"""


class Keep:
    """`keep` commands in one folder with its keep.toml, each run as a process."""

    def __init__(self, folder: Path, store: str) -> None:
        self.folder = folder
        self.store = store
        self.outputs: list[str] = []

    def run(self, script: str, *, name: str = "hostile.js") -> tuple[int, int]:
        """`keep run --until-idle` of `script`; its exit code and peak RSS in KiB."""
        path = self.folder / name
        path.write_text(script)
        rss_file = self.folder / "rss"
        env = {**os.environ, "SVC_TOKEN": TOKEN, "PYTHONPATH": str(Path.cwd())}
        env.pop("KEEP_CONFIG", None)
        command = [sys.executable, "-c", MEASURE, str(rss_file), *KEEP]
        command += ["run", str(path), "--store", self.store, "--until-idle"]
        command += ["--grant", "svc.read", "--isolation", "in-process"]
        done = subprocess.run(
            command, cwd=self.folder, env=env, capture_output=True, text=True, timeout=120
        )
        self.outputs += [done.stdout, done.stderr]
        return done.returncode, int(rss_file.read_text())

    def statuses(self) -> list[RunStatus]:
        return [status for status, _ in self.runs()]

    def runs(self) -> list[tuple[RunStatus, str]]:
        """Each run's status and error."""
        store = open_store(self.store)
        try:
            return [(run.status, run.error or "") for run in store.list_runs()]
        finally:
            store.close()

    def check_clean(self) -> None:
        """No traceback and no secret in any output or file of the folder; no run active."""
        text = "\n".join(self.outputs)
        assert "Traceback" not in text
        assert TOKEN not in text
        for path in self.folder.rglob("*"):
            if path.is_file() and path.suffix != ".toml":
                assert TOKEN.encode() not in path.read_bytes(), path
        statuses = self.statuses()
        assert statuses
        assert RunStatus.ACTIVE not in statuses


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def keep_in(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], Keep]:
    """A `Keep` in a new folder of `tmp_path` with a store of its own, on the param's kind."""

    def make(name: str) -> Keep:
        folder = tmp_path / name
        folder.mkdir()
        if request.param == "sqlite":
            return Keep(folder, f"sqlite:///{folder / 'store' / 'keep.db'}")
        server = request.getfixturevalue("postgres_server")
        return Keep(folder, server.create_database(name))

    return make


@pytest.fixture
def keep(keep_in: Callable[[str], Keep]) -> Keep:
    return keep_in("hostile")


@pytest.fixture
def baseline_kib(keep_in: Callable[[str], Keep]) -> int:
    """Peak RSS of a trivial `keep run` (an HTTP connector whose server never answers).

    It has a store of its own: its run pauses transient, and in a shared store the
    test's `keep run` would only retry that run, or find it not yet due and do nothing.
    """
    baseline = keep_in("baseline")
    (baseline.folder / "keep.toml").write_text(HTTP_TOML.format(url="http://127.0.0.1:9", cap=CAP))
    _, rss = baseline.run(READER.format(call="svc.fetch({})"), name="baseline.js")
    assert [status for status, _ in baseline.runs()] == [RunStatus.PAUSED_TRANSIENT]
    return rss


def serve(answer: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer(self)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def within_caps(rss_kib: int, baseline_kib: int, caps_bytes: int) -> bool:
    return rss_kib < 2 * (baseline_kib + caps_bytes // 1024)


@pytest.mark.parametrize("answer", [gzip_bomb, flood], ids=["gzip-bomb", "huge-body"])
def test_a_hostile_http_service_is_cut_off_within_the_caps(
    keep: Keep, baseline_kib: int, answer: Callable[[BaseHTTPRequestHandler], None]
) -> None:
    for url in serve(answer):
        (keep.folder / "keep.toml").write_text(HTTP_TOML.format(url=url, cap=CAP))
        _, rss = keep.run(READER.format(call="svc.fetch({})"))
    assert within_caps(rss, baseline_kib, CAP), (rss, baseline_kib)
    keep.check_clean()
    runs = keep.runs()
    assert any("max_response_bytes" in error for _, error in runs), runs


def _mcp_toml(*flags: str) -> str:
    args = ", ".join(f'"{a}"' for a in [str(HOSTILE_MCP), *flags])
    return MCP_TOML.format(python=sys.executable, args=args, cap=CAP)


def test_a_huge_mcp_result_is_refused_within_the_caps(keep: Keep, baseline_kib: int) -> None:
    (keep.folder / "keep.toml").write_text(_mcp_toml("--huge-bytes", str(64 * CAP), "--garbage"))
    _, rss = keep.run(READER.format(call="svc.lookup({})"))
    assert within_caps(rss, baseline_kib, CAP), (rss, baseline_kib)
    keep.check_clean()
    assert any("max_result_bytes" in error for _, error in keep.runs())


def test_a_garbage_line_from_an_mcp_server_prints_no_traceback(keep: Keep) -> None:
    (keep.folder / "keep.toml").write_text(_mcp_toml("--garbage"))
    code, _ = keep.run(READER.format(call="svc.lookup({})"))
    assert code == 0
    keep.check_clean()
    assert keep.statuses() == [RunStatus.COMMITTED]


def test_an_mcp_tool_named_has_own_property_is_one_message_naming_the_override(
    keep: Keep,
) -> None:
    (keep.folder / "keep.toml").write_text(_mcp_toml("--collide"))
    code, _ = keep.run(READER.format(call="svc.lookup({})"))
    text = "".join(keep.outputs)
    assert code != 0
    assert "Traceback" not in text
    assert "hasOwnProperty" in text
    assert "tools.hasOwnProperty" in text
