"""The composition root: the store, connectors, runtime and scheduler of one installation.

`Installation.open` assembles them from the loaded plugins and passes each
the registries it needs; nothing below this module looks a registry up for
itself. The ``keep`` commands (and a web console) work on an `Installation`.

The built-in connectors are test doubles. So that ``keep status`` after
``keep run`` sees what the run did (and so several worker processes share one
mailbox, sheet and chat), the doubles keep their state in a SQLite file: by
default ``doubles.db`` next to a SQLite store, in memory for other stores
unless ``--doubles PATH`` says where.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy.engine import make_url

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import ServiceDouble
from keep_sdk.errors import ActionRefused, ConfigurationError
from keep_sdk.model import HostPolicy
from keep_sdk.plugins import KeepPlugins, default_plugins
from keep_sdk.runtime import PersonActions, Runtime
from keep_sdk.sandbox import InProcessIsolation, Isolation, ProcessIsolation
from keep_sdk.scheduler import DEFAULT_LEASE_TTL_S, Scheduler
from keep_sdk.stores import DEFAULT_STORE_URL, Store, store_scheme

__all__ = [
    "ISOLATIONS",
    "Installation",
    "default_doubles_path",
    "load_seed",
]

ISOLATIONS = ("process", "in-process")
"""``process``: each phase in a killable worker process (the default); ``in-process``: faster,
for trusted scripts and tests."""

_LEASE_POLL_S = 0.2


def default_doubles_path(store_url: str) -> Path | None:
    """``doubles.db`` next to a SQLite store file; None (in memory) for other stores."""
    if store_scheme(store_url) != "sqlite":
        return None
    database = make_url(store_url).database
    if not database:
        return None
    return Path(database).expanduser().parent / "doubles.db"


def load_seed(path: Path) -> dict[str, dict[str, Any]]:
    """Read connector data (JSON or YAML): ``{connector name: state document}``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read the seed file {path}: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"the seed file {path} is not valid JSON/YAML: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ConfigurationError(
            f"the seed file {path} must map connector names to their data, such as "
            '{"gmail": {"messages": [...]}, "sheets": {"spreadsheets": {...}}}'
        )
    return data


def _isolation(name: str) -> Isolation:
    if name == "process":
        return ProcessIsolation()
    if name == "in-process":
        return InProcessIsolation()
    raise ConfigurationError(f"unknown isolation {name!r}; choose one of: {', '.join(ISOLATIONS)}")


@dataclass
class Installation:
    """An opened store with its connectors and runtime; close it when done."""

    store_url: str
    store: Store
    connectors: ConnectorSet
    runtime: Runtime
    doubles_path: Path | None

    @classmethod
    def open(
        cls,
        store_url: str | None = None,
        *,
        doubles: Path | None = None,
        isolation: str = "process",
        policy: HostPolicy | None = None,
        plugins: KeepPlugins | None = None,
    ) -> Installation:
        """Open the store at `store_url` (default ``sqlite:///.keep/keep.db``) with the
        connectors, rules, store schemes and observers of `plugins` (default: the
        installed plugins); built-in doubles are backed by `doubles` (or the default)."""
        url = store_url or DEFAULT_STORE_URL
        plugins = plugins or default_plugins()
        store = plugins.open_store(url)
        backing = doubles if doubles is not None else default_doubles_path(url)
        options: dict[str, Mapping[str, Any]] = {}
        if backing is not None:
            for name, klass in plugins.connectors().items():
                if issubclass(klass, ServiceDouble):
                    options[name] = {"backing": backing}
        connectors = plugins.connector_set(**options)
        runtime = Runtime(
            store,
            connectors,
            policy=policy,
            isolation=_isolation(isolation),
            load_workflow=plugins.load_workflow,
            observe=plugins.notify,
        )
        return cls(url, store, connectors, runtime, backing)

    @property
    def actions(self) -> PersonActions:
        """A person's actions on this installation."""
        return PersonActions(self.runtime)

    def scheduler(
        self, *, worker: str | None = None, lease_ttl_s: float = DEFAULT_LEASE_TTL_S
    ) -> Scheduler:
        """A scheduler on this installation's runtime; close it to release its leases."""
        return Scheduler(self.runtime, worker=worker, lease_ttl_s=lease_ttl_s)

    @contextmanager
    def holding(self, workflow: str, *, worker: str, wait_s: float) -> Iterator[None]:
        """Hold `workflow`'s lease as `worker` for the duration, so no other worker runs it
        while a person's action drives its runs here.

        Waits up to `wait_s` seconds for the current holder to let go, then
        raises `ActionRefused` naming it. The lease is released on exit.
        """
        scheduler = self.scheduler(worker=worker)
        try:
            deadline = time.monotonic() + wait_s
            while scheduler.leases.claim(workflow) is None:
                if time.monotonic() > deadline:
                    lease = self.store.get_lease(workflow)
                    owner = lease.owner if lease else "another worker"
                    raise ActionRefused(
                        f"workflow {workflow!r} is busy on {owner}; try again in a moment "
                        "(or stop that worker)"
                    )
                time.sleep(_LEASE_POLL_S)
            yield
        finally:
            scheduler.close()

    def seed(self, data: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """Give connectors their data; returns the names seeded. Unknown names are an error."""
        seeded = []
        for name, document in data.items():
            connector = self.connectors[name]
            if not isinstance(connector, ServiceDouble):
                raise ConfigurationError(
                    f"connector {name!r} is not a built-in double; only doubles take seed data"
                )
            connector.seed(dict(document))
            seeded.append(name)
        return seeded

    def close(self) -> None:
        """Stop worker processes and release the store's connections."""
        self.runtime.close()
        close = getattr(self.runtime.isolation, "close", None)
        if callable(close):
            close()
        self.store.close()
