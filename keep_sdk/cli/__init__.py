"""The ``keep`` command line; the only package that imports click and rich.

`cli` is the click group (`group`) and `main` the console script's entry point
(``keep = "keep_sdk.cli:main"``). One module per command group: `validate`,
`connectors` (connectors, call), `schema`, `run` (run, worker), `inspection`
(status, events, runs, ledger), `actions` (skip, resolve, pause, resume,
grant) and `conformance`; `views` renders for people, `support` and `options`
hold what the commands share.
"""

import os as _os
import signal as _signal


def _interrupted_while_starting(_signum: int, _frame: object) -> None:
    """Ctrl-C while the command line's modules load: nothing was done yet, so end at once
    (130). Raising would not do: Python wraps an exception raised in a class body's
    ``__set_name__`` in a ``RuntimeError`` of its own, whose traceback it prints."""
    _os._exit(130)


_previous = _signal.getsignal(_signal.SIGINT)
if _previous is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)
try:
    from keep_sdk.cli.group import cli, main
finally:
    if _previous is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _previous)

__all__ = ["cli", "main"]
