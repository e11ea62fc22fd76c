"""Options the state-touching commands share, and the installation they open.

``--store URL`` everywhere (default ``sqlite:///.keep/keep.db``); ``--doubles``
and ``--isolation`` on the commands that run scripts; ``--json`` on the ones
that print for machines.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from keep_sdk.app import (
    DEFAULT_ISOLATION,
    ISOLATIONS,
    Installation,
    OpenedStore,
    read_config,
    sqlite_path,
)
from keep_sdk.app import script_manifest as app_script_manifest
from keep_sdk.cli.group import CONFIG_META
from keep_sdk.cli.support import EXIT_USAGE, abandon, fail, loaded_plugins
from keep_sdk.config import KeepConfig
from keep_sdk.contract.manifest import Manifest
from keep_sdk.errors import ConfigurationError, ScriptRejected, StoreUnavailable
from keep_sdk.model import HostPolicy

if TYPE_CHECKING:
    from keep_sdk.runtime import CheckedScript

__all__ = [
    "CONFIG_META",
    "LEASE_WAIT_S",
    "cli_worker",
    "configuration",
    "doubles_option",
    "isolation_option",
    "json_option",
    "load_script",
    "opened",
    "script_manifest",
    "store_option",
    "stored",
    "wait_option",
]

F = TypeVar("F", bound=Callable[..., Any])

LEASE_WAIT_S = 30
"""What ``--wait`` waits when not given: a lease's time to live
(`keep_sdk.scheduler.DEFAULT_LEASE_TTL_S`, which a test holds it to; spelled here so the
commands that only write to the store need not import the scheduler)."""


def configuration(store_url: str | None) -> KeepConfig:
    """The checked keep.toml for `store_url` (``keep --config PATH``, ``$KEEP_CONFIG``,
    ``keep.toml`` in the working folder or a parent, or next to the store; `read_config`);
    a bad file exits 2 with its one message."""
    context = click.get_current_context(silent=True)
    explicit = context.meta.get(CONFIG_META) if context is not None else None
    try:
        return read_config(store_url, explicit=explicit)
    except ConfigurationError as exc:
        fail(str(exc), code=EXIT_USAGE)


def store_option(func: F) -> F:
    """``--store URL`` as the `store_url` parameter."""
    return click.option(
        "--store",
        "store_url",
        metavar="URL",
        default=None,
        help="sqlite:///path/keep.db (default sqlite:///.keep/keep.db), postgresql://…, memory://",
    )(func)


def doubles_option(func: F) -> F:
    """``--doubles PATH`` as the `doubles` parameter."""
    return click.option(
        "--doubles",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="SQLite file holding the built-in connectors' data (default: doubles.db next to "
        "a SQLite store; in memory otherwise).",
    )(func)


def isolation_option(func: F) -> F:
    """``--isolation process|in-process`` as the `isolation` parameter."""
    return click.option(
        "--isolation",
        type=click.Choice(ISOLATIONS),
        default=DEFAULT_ISOLATION,
        show_default=True,
        help="Run each phase in a killable worker process, or in this process.",
    )(func)


def wait_option(func: F) -> F:
    """``--wait SECONDS`` as the `wait` parameter (None: `Installation.holding`'s default,
    a lease's time to live)."""
    return click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=None,
        help="Seconds to wait for a worker to let go of the workflow "
        f"[default: {LEASE_WAIT_S}, a lease's time to live].",
    )(func)


def cli_worker() -> str:
    """The name this process holds leases under while a person's action drives a run."""
    return f"cli:{os.getpid()}"


def json_option(func: F) -> F:
    """``--json`` as the `as_json` flag."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(func)


def script_manifest(store_url: str | None) -> Manifest:
    """What scripts may call here (`keep_sdk.app.script_manifest` of the loaded plugins and
    the keep.toml in effect)."""
    return app_script_manifest(configuration(store_url), plugins=loaded_plugins())


def load_script(
    source: str, filename: str, store_url: str | None, *, name: str | None = None
) -> CheckedScript:
    """Validate a script once, as `keep run` and `keep deploy` deploy it: against the
    registered and configured connectors, with the policy keep.toml gives its workflow
    (`name`, else the name the script declares). Nothing is opened or written, so a
    rejected script leaves no store behind; hand the result to `Runtime.deploy_if_changed`
    as `checked`. Raises `ScriptRejected`."""
    from keep_sdk.plugins import default_plugins
    from keep_sdk.runtime import CheckedScript

    config = configuration(store_url)
    plugins = default_plugins()
    connectors = script_manifest(store_url)

    def load(policy: HostPolicy) -> CheckedScript:
        workflow = plugins.load_workflow(
            source, filename=filename, connectors=connectors, policy=policy
        )
        return CheckedScript(source, filename, workflow, connectors, policy)

    def policy_of(workflow: str) -> HostPolicy:
        return (
            config.policy_for(workflow) if workflow in config.workflow_policies else config.policy
        )

    if name:
        return load(policy_of(name))
    try:
        checked = load(config.policy)
    except ScriptRejected as exc:
        report = exc.report
        declared = report.workflow.name if report is not None and report.workflow else None
        if not declared or policy_of(declared) == config.policy:
            raise
        return load(policy_of(declared))
    declared = checked.workflow.manifest.name
    if declared and policy_of(declared) != config.policy:
        return load(policy_of(declared))
    return checked


def _unwritable(store_url: str) -> Path | None:
    """The file of a SQLite store (the database, its ``-wal`` or ``-shm``) that exists and
    cannot be written now; None for other stores."""
    database = sqlite_path(store_url)
    if database is None:
        return None
    for path in (database, *(database.with_name(database.name + s) for s in ("-wal", "-shm"))):
        if path.exists() and not os.access(path, os.W_OK):
            return path
    return None


@contextmanager
def opened(
    store_url: str | None,
    *,
    doubles: Path | None = None,
    isolation: str = DEFAULT_ISOLATION,
    read_only: bool = False,
    must_exist: bool = False,
) -> Iterator[Installation]:
    """The installation at `store_url`, closed when the block ends (whatever it raises).

    `read_only` (``status``, ``events``, ``runs``, ``ledger``): a missing store is an
    error and nothing is created; `must_exist` (a person's actions): a missing store
    is an error (`Installation.open`). A store whose files were made read-only while the
    block ran ends the process with its one message and exit 1, the store left unclosed
    (`keep_sdk.cli.support.abandon`)."""
    installation = Installation.open(
        store_url,
        plugins=loaded_plugins(),
        doubles=doubles,
        isolation=isolation,
        read_only=read_only,
        must_exist=must_exist,
        config=configuration(store_url),
    )
    writable = _unwritable(installation.store_url) is None
    error: str | None = None
    try:
        yield installation
    except StoreUnavailable as exc:
        error = str(exc)
        raise
    finally:
        unwritable = _unwritable(installation.store_url)
        if writable and unwritable is not None:
            abandon(
                error
                or f"the store file {unwritable} was made read-only while keep was using it; "
                "make it writable again (chmod u+w, chattr -i) and start keep again"
            )
        installation.close()


@contextmanager
def stored(store_url: str | None) -> Iterator[OpenedStore]:
    """The existing store at `store_url` with its keep.toml and no runtime
    (`keep_sdk.app.OpenedStore`: ``publish`` and ``notify`` start without importing the
    sandbox, the validator or the runtime), closed when the block ends."""
    opened_store = OpenedStore.open(
        store_url, plugins=loaded_plugins(), config=configuration(store_url)
    )
    try:
        yield opened_store
    finally:
        opened_store.close()
