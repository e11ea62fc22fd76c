"""Hostile exec adapters through the real CLI (`keep run --until-idle` as a process, SQLite
store in the folder, keep.toml beside it): a flood on stdout is cut off at the cap within
the host's memory bound, no host secret leaves through an adapter, and a script cannot
name a program that keep.toml does not list."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from keep_sdk.model import RunStatus
from keep_sdk.stores import open_store
from tests.cli.test_hostile_e2e import KEEP, MEASURE, within_caps

SVC_TOKEN = "svc-planted-Token-5b2e81"
HOST_SECRET = "host-planted-Secret-93d0c4"
CAP = 1024 * 1024

TOML = """
[connectors.svc]
type = "http"
base_url = "http://127.0.0.1:9"
headers = {{ Authorization = "Bearer ${{SVC_TOKEN}}" }}

[connectors.svc.operations.fetch]
kind = "read"
path = "/anything"

[connectors.exec]
type = "exec"
timeout_s = 10
max_output_bytes = {cap}

[connectors.exec.adapters.flood]
program = "{python}"
args = ["-c", "import sys\\nfor _ in range(1024): sys.stdout.buffer.write(b'x' * 65536)"]

[connectors.exec.adapters.env]
program = "{env}"

[connectors.exec.adapters.env-token]
program = "{env}"
env = ["PATH", "SVC_TOKEN"]
"""

CONSUMER = """
    {name}: Keep.consumer({{
      subscribe: ["go"],
      async prepare(ctx, state) {{
        const [e] = await ctx.peek("go", {{ limit: 1 }});
        if (!e) return {{ reservations: [], data: {{}} }};
        return {{ reservations: [{{ topic: "go", ids: [e.messageId] }}], data: {{}} }};
      }},
      async mutate(ctx, prepared) {{
        await ctx.exec.call({{ adapter: {url}, params: {{}} }});
      }},
      async next(ctx, prepared, mutationResult) {{}},
    }}),"""

WORKFLOW = """
export default Keep.workflow({{
  name: "execs",
  topics: {{ "go": {{}} }},
  producers: {{
    kick: {{
      schedule: {{ interval: "1h" }},
      publishes: ["go"],
      handler: async (ctx, state) => {{
        await ctx.publish("go", {{ messageId: "one", title: "go", payload: {{}} }});
        return {{}};
      }},
    }},
  }},
  consumers: {{{consumers}
  }},
}});
"""


def workflow(*urls: str) -> str:
    """A workflow whose producer publishes one event and whose consumers each call one URL."""
    consumers = "".join(
        CONSUMER.format(name=f"call{i}", url=_js_string(url)) for i, url in enumerate(urls)
    )
    return WORKFLOW.format(consumers=consumers)


def _js_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Folder:
    """A folder with keep.toml and a SQLite store; `keep run` in it as a measured process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.store = f"sqlite:///{folder / 'store' / 'keep.db'}"
        self.outputs: list[str] = []
        env_program = next(p for p in ("/usr/bin/env", "/bin/env") if os.path.exists(p))
        (folder / "keep.toml").write_text(
            TOML.format(cap=CAP, python=sys.executable, env=env_program)
        )

    def run(self, script: str) -> tuple[int, int]:
        """`keep run --until-idle` of `script`; its exit code and peak RSS in KiB."""
        path = self.folder / "execs.js"
        path.write_text(script)
        rss_file = self.folder / "rss"
        env = {
            **os.environ,
            "SVC_TOKEN": SVC_TOKEN,
            "HOST_SECRET": HOST_SECRET,
            "PYTHONPATH": str(Path(__file__).parents[2]),
        }
        env.pop("KEEP_CONFIG", None)
        command = [sys.executable, "-c", MEASURE, str(rss_file), *KEEP]
        command += ["run", str(path), "--store", self.store, "--until-idle"]
        command += ["--grant", "exec.call", "--isolation", "in-process"]
        done = subprocess.run(
            command, cwd=self.folder, env=env, capture_output=True, text=True, timeout=120
        )
        self.outputs += [done.stdout, done.stderr]
        return done.returncode, int(rss_file.read_text())

    def consumer_runs(self) -> list[tuple[RunStatus, str]]:
        """Status and error of each consumer run."""
        store = open_store(self.store)
        try:
            return [
                (run.status, run.error or "")
                for run in store.list_runs()
                if run.handler.startswith("call")
            ]
        finally:
            store.close()

    def check_clean(self) -> None:
        """No traceback, no host secret in any output, store file or run error; no run active."""
        text = "\n".join(self.outputs)
        assert "Traceback" not in text
        runs = self.consumer_runs()
        assert runs
        files = [path for path in self.folder.rglob("*") if path.is_file()]
        for piece in _pieces(SVC_TOKEN) + _pieces(HOST_SECRET):
            assert piece not in text
            for path in files:
                assert piece.encode() not in path.read_bytes(), path
            for _, error in runs:
                assert piece not in error
        assert all(status is not RunStatus.ACTIVE for status, _ in runs), runs


def _pieces(secret: str, size: int = 8) -> list[str]:
    """Every `size`-character piece of `secret`: a cut secret leaks too."""
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


@pytest.fixture(scope="module")
def baseline_kib(tmp_path_factory: pytest.TempPathFactory) -> int:
    """Peak RSS of a trivial `keep run` in the same setup (a producer, no adapter called)."""
    _, rss = Folder(tmp_path_factory.mktemp("baseline")).run(workflow())
    return rss


def test_an_adapter_flooding_stdout_is_stopped_at_the_cap_within_the_memory_bound(
    tmp_path: Path, baseline_kib: int
) -> None:
    folder = Folder(tmp_path)
    _, rss = folder.run(workflow("keep+exec://flood/x"))
    assert within_caps(rss, baseline_kib, CAP), (rss, baseline_kib)
    folder.check_clean()
    [(_, error)] = folder.consumer_runs()
    assert f"printed more than {CAP} bytes" in error
    assert "max_output_bytes" in error


@pytest.mark.parametrize(
    ("adapter", "shown"), [("env", "PATH=***"), ("env-token", "SVC_TOKEN=***")]
)
def test_an_adapter_printing_its_environment_shows_no_host_secret(
    tmp_path: Path, adapter: str, shown: str
) -> None:
    folder = Folder(tmp_path)
    folder.run(workflow(f"keep+exec://{adapter}/x"))
    folder.check_clean()
    [(_, error)] = folder.consumer_runs()
    assert f"adapter {adapter!r} answered start with" in error
    assert shown in error
    assert "HOST_SECRET" not in error


def test_a_script_naming_an_unlisted_program_never_runs_it(tmp_path: Path) -> None:
    folder = Folder(tmp_path)
    code, _ = folder.run(workflow("keep+exec://sh/x?q=$(touch pwned)"))
    assert not (tmp_path / "pwned").exists()
    assert not list(tmp_path.rglob("pwned"))
    folder.check_clean()
    [(status, error)] = folder.consumer_runs()
    assert status is RunStatus.FAILED_LOGIC
    assert "adapter 'sh' is not an adapter listed in keep.toml" in error
    assert "[connectors.exec.adapters.sh]" in "\n".join(folder.outputs)
    assert code == 1
