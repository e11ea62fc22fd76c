"""The ``keep`` command line; the only package that imports click and rich.

`cli` is the click group (`group`) and `main` the console script's entry point
(``keep = "keep_sdk.cli:main"``). One module per command group: `validate`,
`connectors` (connectors, call), `schema`, `run` (run, worker), `inspection`
(status, events, runs, ledger), `actions` (skip, resolve, pause, resume,
grant) and `conformance`; `views` renders for people, `support` and `options`
hold what the commands share.
"""

from keep_sdk.cli.group import cli, main

__all__ = ["cli", "main"]
