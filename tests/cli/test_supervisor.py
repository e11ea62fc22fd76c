"""The supervisor of ``keep worker --processes`` over real child processes that die, exit,
hang and ignore signals, and the argv it gives them, round-tripped through click."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import click
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.cli._supervisor import Supervisor, child_arguments
from keep_sdk.cli.group import cli
from keep_sdk.cli.run import worker_command
from keep_sdk.scheduler import RetryPolicy

QUICK = RetryPolicy(base_s=0.01, cap_s=0.05)

DIES_TWICE = """
import os, signal, sys
from pathlib import Path
count = Path(sys.argv[1])
n = int(count.read_text()) if count.exists() else 0
count.write_text(str(n + 1))
if n < 2:
    os.kill(os.getpid(), signal.SIGKILL)
"""

WAITS = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN if sys.argv[1] == "ignore" else lambda *_: sys.exit(0))
time.sleep(60)
"""


def python(script: str, *args: str) -> list[str]:
    return [sys.executable, "-c", script, *args]


def signal_self_later(delays: list[float]) -> None:
    """SIGTERM to this process after each of `delays` (seconds, from now)."""

    def send() -> None:
        for delay in delays:
            time.sleep(delay)
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=send, daemon=True).start()


def test_a_child_a_signal_ends_is_started_again_until_it_exits_cleanly(tmp_path: Path) -> None:
    said: list[str] = []
    counters = {1: tmp_path / "one", 2: tmp_path / "two"}
    supervisor = Supervisor(lambda i: python(DIES_TWICE, str(counters[i])), 2, said.append, QUICK)
    assert supervisor.run() == 0
    assert [path.read_text() for path in counters.values()] == ["3", "3"]
    deaths = [line for line in said if "was ended by SIGKILL; starting it again in" in line]
    assert len(deaths) == 4, said
    assert supervisor.pids() == []


def test_a_child_that_exits_with_a_problem_stops_the_others_with_its_code() -> None:
    said: list[str] = []
    scripts = {1: python(WAITS, "exit"), 2: python("import sys; sys.exit(3)")}
    started = time.monotonic()
    supervisor = Supervisor(lambda i: scripts[i], 2, said.append, QUICK)
    assert supervisor.run() == 3
    assert time.monotonic() - started < 20
    assert any("worker process 2" in line and "exited with code 3" in line for line in said)
    assert supervisor.pids() == []


def test_sigterm_is_passed_on_and_every_child_is_waited_for() -> None:
    said: list[str] = []

    def command(index: int) -> list[str]:
        if index == 2:
            signal_self_later([0.5])
        return python(WAITS, "exit")

    started = time.monotonic()
    assert Supervisor(command, 2, said.append, QUICK).run() == 0
    assert time.monotonic() - started < 20
    assert said == []


def test_a_second_signal_kills_the_children_that_did_not_stop() -> None:
    said: list[str] = []

    def command(index: int) -> list[str]:
        if index == 2:
            signal_self_later([0.5, 0.5])
        return python(WAITS, "ignore")

    supervisor = Supervisor(command, 2, said.append, QUICK)
    started = time.monotonic()
    assert supervisor.run() == 1
    assert time.monotonic() - started < 20
    assert any("killed 2 worker processes that had not stopped" in line for line in said), said
    assert supervisor.pids() == []


def test_a_stop_while_a_child_waits_to_start_again_does_not_start_it() -> None:
    said: list[str] = []
    calls: list[int] = []

    def command(index: int) -> list[str]:
        calls.append(index)
        if len(calls) == 1:
            signal_self_later([1.0])
        return python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")

    slow = RetryPolicy(base_s=30.0, cap_s=30.0)
    started = time.monotonic()
    assert Supervisor(command, 1, said.append, slow).run() == 0
    assert time.monotonic() - started < 10
    assert calls == [1]


TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20)


@settings(max_examples=150, deadline=None)
@given(
    options=st.fixed_dictionaries(
        {},
        optional={
            "--store": TEXT,
            "--doubles": TEXT.filter(lambda t: Path(t).name not in ("", ".", "..")),
            "--isolation": st.sampled_from(["process", "in-process"]),
            "--lease-ttl": st.floats(0.5, 1e6),
            "--name": TEXT,
            "--poll": st.floats(0.01, 1e3),
            "--until-idle": st.just(None),
            "--concurrency": st.integers(1, 64),
            "--processes": st.integers(1, 8),
            "--metrics-port": st.integers(0, 65535),
            "--metrics-host": TEXT,
            "--healthy-within": st.floats(1, 1e6),
            "--otel": st.just(None),
        },
    ),
    config=st.none() | TEXT.filter(lambda t: Path(t).name not in ("", ".", "..")),
    index=st.integers(1, 8),
)
def test_a_child_is_given_the_options_its_supervisor_was_given(
    options: dict[str, object], config: str | None, index: int
) -> None:
    given_args = [
        part
        for name, value in options.items()
        for part in ([name] if value is None else [name, str(value)])
    ]
    head = ["--config", config] if config is not None else []
    ctx = parsed(head, given_args)
    argv = child_arguments(ctx, {"supervised": index}, drop=("processes",))
    assert argv[:3] == [sys.executable, "-m", "keep_sdk"]
    rest = argv[3:]
    split = rest.index("worker")
    again = parsed(rest[:split], rest[split + 1 :])
    assert again.params == {**ctx.params, "supervised": index, "processes": 1}
    assert again.find_root().params == ctx.find_root().params


def parsed(group_args: list[str], command_args: list[str]) -> click.Context:
    root = cli.make_context("keep", [*group_args, "worker"], resilient_parsing=True)
    return worker_command.make_context("worker", list(command_args), parent=root)
