"""Ctrl-C where Python does not let a `KeyboardInterrupt` through as itself: in a class
body's ``__set_name__`` (an import defining a class), in a finaliser, and while the command
line's modules load. Each is a real SIGINT raised in a real process at that point."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

ENDING = """
import signal
from keep_sdk.cli._interrupts import ending

def command():
{body}
    return 0

ending(command)
"""

SET_NAME = """
    class Field:
        def __set_name__(self, owner, name):
            signal.raise_signal(signal.SIGINT)
            sum(range(1000))

    class Model:
        field = Field()
"""

FINALISER = """
    import gc, time

    class Held:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)
            sum(range(1000))

    held = Held()
    del held
    gc.collect()
    time.sleep(0.2)
    print("went on as if Ctrl-C was not pressed")
"""

LOGGED = """
    import logging

    try:
        signal.raise_signal(signal.SIGINT)
        sum(range(1000))
    except BaseException:
        pool = logging.getLogger("sqlalchemy.pool.impl.QueuePool")
        pool.error("Exception closing connection %r", object(), exc_info=True)
        raise
"""

LOGGED_FAILURE = """
    import logging

    try:
        raise OSError("disk I/O error")
    except OSError:
        logging.getLogger("sqlalchemy.pool").error("Exception closing connection", exc_info=True)
"""

NOT_AN_INTERRUPT = """
    raise RuntimeError("a bug of the command")
"""


def _ending(body: str) -> str:
    """A program whose command runs `body` under `ending`."""
    return ENDING.format(body=textwrap.indent(textwrap.dedent(body), "    "))


_CTRL_C_AS_AT_A_TERMINAL = (
    "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
)
"""A program started in the background of a shell without job control inherits Ctrl-C
ignored; each program here starts as one started at a terminal."""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CTRL_C_AS_AT_A_TERMINAL + code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "body", [SET_NAME, FINALISER, LOGGED], ids=["set_name", "finaliser", "logged"]
)
def test_a_ctrl_c_python_wraps_or_swallows_ends_the_command_with_130(body: str) -> None:
    done = _run(_ending(body))
    assert done.returncode == 130, done.stderr
    assert done.stderr == ""
    assert "went on" not in done.stdout


def test_a_library_logging_its_own_failure_is_still_printed() -> None:
    done = _run(_ending(LOGGED_FAILURE))
    assert done.returncode == 0, done.stderr
    assert "Exception closing connection" in done.stderr
    assert "OSError: disk I/O error" in done.stderr


def test_an_error_of_the_command_is_not_taken_for_an_interrupt() -> None:
    done = _run(_ending(NOT_AN_INTERRUPT))
    assert done.returncode == 1
    assert "RuntimeError: a bug of the command" in done.stderr


def test_a_ctrl_c_while_the_command_line_loads_ends_it_with_130_and_no_traceback() -> None:
    code = textwrap.dedent(
        """
        import signal, sys

        class Field:
            def __set_name__(self, owner, name):
                signal.raise_signal(signal.SIGINT)
                sum(range(1000))

        class InterruptOnClick:
            def find_spec(self, name, path=None, target=None):
                if name == "click":
                    class Model:
                        field = Field()
                return None

        sys.meta_path.insert(0, InterruptOnClick())
        import keep_sdk.cli
        print("loaded")
        """
    )
    done = _run(code)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")


def test_importing_the_command_line_leaves_ctrl_c_as_it_was() -> None:
    code = "import signal, keep_sdk.cli; print(signal.getsignal(signal.SIGINT).__name__)"
    done = _run(code)
    assert done.stdout.strip() == "default_int_handler", done.stderr
