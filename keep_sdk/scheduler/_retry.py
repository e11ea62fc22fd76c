"""One retry policy for every store call a worker makes, and which store errors it retries.

A transient error is one that ends by itself: the connection was lost or refused, the
server is starting or shutting down, an administrator terminated the backend, a
serialization failure or deadlock, a lock that could not be had, the disk full or a
SQLite file locked by another program. A configuration error (a wrong password, a
database or role that does not exist, a schema newer than this version) never ends by
itself and is raised at once, so the worker can stop with a message a person can act on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from keep_sdk.errors import ConfigurationError, SchemaVersionError, StoreRolledBack

__all__ = [
    "WORKER_RETRY",
    "Outage",
    "OutageWatcher",
    "RetryPolicy",
    "is_transient",
    "retrying",
]

T = TypeVar("T")

_TRANSIENT_SQLSTATES = ("08", "53", "57P01", "57P02", "57P03", "40001", "40P01", "55P03")
"""PostgreSQL error codes (a class by its two first characters) that end by themselves:
connection exceptions, insufficient resources, admin or crash shutdown, cannot connect
now (starting up), serialization failure, deadlock, lock not available."""

_CONFIGURATION_WORDS = (
    "password authentication failed",
    "authentication failed",
    "no pg_hba.conf entry",
    "does not exist",
    "permission denied",
    "invalid dsn",
    "invalid connection option",
)
"""Words of a connection failure that no waiting mends (libpq gives these no code)."""

_TRANSIENT_NAMES = frozenset(
    {"OperationalError", "InterfaceError", "ConnectionError", "StoreUnavailable"}
)


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        todo.extend(
            [
                current.__cause__,
                current.__context__,
                orig if isinstance(orig, BaseException) else None,
            ]
        )


def is_transient(error: BaseException) -> bool:
    """Whether `error` (or what it was raised from) is a store error that ends by itself."""
    transient = False
    for link in _chain(error):
        if isinstance(link, ConfigurationError | SchemaVersionError | StoreRolledBack):
            return False
        sqlstate = getattr(link, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate:
            return sqlstate.startswith(_TRANSIENT_SQLSTATES)
        if type(link).__name__ in _TRANSIENT_NAMES or isinstance(
            link, ConnectionError | TimeoutError
        ):
            message = str(link).lower()
            if any(word in message for word in _CONFIGURATION_WORDS):
                return False
            transient = True
    return transient


class RetryPolicy(BaseModel):
    """Exponential backoff with jitter: the n-th consecutive failure waits a random time in
    ``[base_s, min(cap_s, base_s * 2 ** (n - 1))]``. `attempts` bounds the failures retried
    (None: retry for as long as they last, as a worker does)."""

    model_config = ConfigDict(frozen=True)

    base_s: float = Field(default=0.05, gt=0)
    cap_s: float = Field(default=10.0, gt=0)
    attempts: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> RetryPolicy:
        if self.cap_s < self.base_s:
            raise ValueError(f"cap_s ({self.cap_s}) is below base_s ({self.base_s})")
        return self

    def delay(self, failure: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after the `failure`-th consecutive failure (counted from 1)."""
        ceiling = min(self.cap_s, self.base_s * 2 ** min(max(failure, 1) - 1, 60))
        return (rng or random).uniform(self.base_s, ceiling)

    def exhausted(self, failures: int) -> bool:
        """Whether `failures` consecutive failures use the whole budget."""
        return self.attempts is not None and failures >= self.attempts


WORKER_RETRY = RetryPolicy()
"""The policy of a worker: from 50 ms up to 10 s between tries, for as long as it takes."""


def retrying(
    call: Callable[[], T],
    policy: RetryPolicy = WORKER_RETRY,
    *,
    sleep: Callable[[float], object] = time.sleep,
    rng: random.Random | None = None,
    on_failure: Callable[[BaseException, float], None] | None = None,
) -> T:
    """`call()`, retried after the policy's delay while it fails with a transient error.

    A non-transient error is raised at once; a transient one after the budget is used.
    `on_failure` hears each retried error and the delay before the next try; `sleep`
    waits (it may return early, a stop event's ``wait`` say: the next try comes at once).
    """
    failures = 0
    while True:
        try:
            return call()
        except Exception as exc:
            failures += 1
            if not is_transient(exc) or policy.exhausted(failures):
                raise
            pause = policy.delay(failures, rng)
            if on_failure is not None:
                on_failure(exc, pause)
            sleep(pause)


class OutageWatcher(Protocol):
    """Hears what an `Outage` records (`keep_sdk.telemetry.KeepMetrics` is one): every
    failed try, then once when the outage begins, and once when the store answers again.
    Over a watcher's life, outages begun equal outages recovered, plus one while an outage
    lasts."""

    def store_error(self) -> None:
        """A try failed with a transient store error."""

    def outage_began(self) -> None:
        """The first failed try of an outage."""

    def outage_recovered(self, lasted_s: float) -> None:
        """The first try that worked after an outage of `lasted_s` seconds."""


class Outage:
    """When the store became unreachable and how many tries failed since: one outage is
    reported once when it begins and once when it ends, also to `watcher`."""

    def __init__(
        self, policy: RetryPolicy = WORKER_RETRY, watcher: OutageWatcher | None = None
    ) -> None:
        self.policy = policy
        self.watcher = watcher
        self.since: float | None = None
        self.failures = 0

    def failed(self) -> tuple[bool, float]:
        """Record a failed try; whether it began a new outage, and the delay before the next."""
        began = self.since is None
        if began:
            self.since = time.monotonic()
        self.failures += 1
        if self.watcher is not None:
            self.watcher.store_error()
            if began:
                self.watcher.outage_began()
        return began, self.policy.delay(self.failures)

    def ended(self) -> float | None:
        """Record a try that worked; the outage's length in seconds, None if there was none."""
        since, self.since, self.failures = self.since, None, 0
        if since is None:
            return None
        lasted = time.monotonic() - since
        if self.watcher is not None:
            self.watcher.outage_recovered(lasted)
        return lasted
