"""`ServiceDouble`: the base of the built-in in-memory stand-ins for external services."""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import JsonValue

from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.builtin.faults import Fault, FaultKind, FaultPlan
from keep_sdk.connectors.builtin.seeding import merge
from keep_sdk.errors import (
    PermissionDenied,
    PreconditionFailed,
    TransientError,
    UncertainOutcome,
)
from keep_sdk.model import ReconcileOutcome, ReconcileStatus

__all__ = ["ServiceDouble"]

Doc = dict[str, Any]
T = TypeVar("T")


class ServiceDouble(Connector):
    """An in-memory external service with fault injection and optional file backing.

    Its whole state is one JSON document. With `backing` (a SQLite file path)
    every operation reads the document from the file and every mutation writes it
    back in one transaction before returning, so the effects of a process that is
    killed survive it and another process can count them. Several doubles may
    share one file.

    Every applied mutation is appended to ``state["effects"]`` with its
    idempotency key; `reconcile` looks there, like a real reconcile would query
    the service by key.

    In memory, an operation works on the live document, so its cost does not
    grow with what the service holds. The contract of every ``apply`` callback
    given to `_mutate` or `_start_once` is therefore: check everything, raise
    (`PreconditionFailed`) before changing anything, then change the document.
    With `backing`, a raising callback's changes are never written.
    """

    permission_prefix: ClassVar[str]

    def __init__(
        self,
        *,
        backing: str | os.PathLike[str] | None = None,
        seed: Doc | None = None,
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.faults = FaultPlan()
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self._lock = threading.RLock()
        self._backing = Path(backing) if backing is not None else None
        self._memory: Doc = self.empty_state()
        if self._backing is not None:
            self._init_backing()
        if seed is not None:
            self.seed(seed)

    @classmethod
    def empty_state(cls) -> Doc:
        """The document of a service that holds nothing yet."""
        return {"effects": []}

    def seed(self, data: Doc) -> None:
        """Merge `data` into the state (top-level keys replaced), before any run."""
        with self._state() as state:
            state.update(copy.deepcopy(data))

    def merge_seed(self, data: Doc) -> None:
        """Merge `data` into the state without losing anything it holds (`seeding.merge`):
        other spreadsheets and the rows a workflow wrote stay."""
        with self._state() as state:
            merged = merge(state, data)
            state.clear()
            state.update(merged)

    def snapshot(self) -> Doc:
        """A deep copy of the current state document."""
        with self._state(write=False) as state:
            return copy.deepcopy(state)

    def effects(self, operation: str | None = None) -> list[Doc]:
        """Applied mutations, oldest first, optionally of one operation."""
        return [
            e
            for e in self.snapshot()["effects"]
            if operation is None or e["operation"] == operation
        ]

    # Implementation helpers for subclasses.

    def _read(self, operation: str, read: Callable[[Doc], T]) -> T:
        self._before_effect(operation, self.faults.take(operation), is_mutation=False)
        with self._state(write=False) as state:
            return read(state)

    def _mutate(
        self, operation: str, key: str, params: JsonValue, apply: Callable[[Doc], JsonValue]
    ) -> JsonValue:
        fault = self.faults.take(operation)
        self._before_effect(operation, fault, is_mutation=True)
        with self._state() as state:
            result = apply(state)
            state["effects"].append(
                {
                    "operation": operation,
                    "idempotencyKey": key,
                    "params": params,
                    "result": result,
                    "at": self.clock().isoformat(),
                }
            )
        if fault is not None and fault.kind is FaultKind.TIMEOUT_AFTER_EFFECT:
            raise UncertainOutcome(
                f"{self.name}.{operation} timed out after the request was sent; "
                "it may have taken effect"
            )
        if fault is not None and fault.kind is FaultKind.CRASH_AFTER_EFFECT:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    def _start_once(
        self, operation: str, token: str, params: JsonValue, apply: Callable[[Doc], JsonValue]
    ) -> tuple[JsonValue, bool]:
        """Start external work once per `token` (a durable operation's idempotency token).

        Returns ``(result, new)``: a repeated start with the same token finds the
        effect of the first and applies nothing (``new`` False). Faults fire as
        for `_mutate`; a crash after the effect leaves the work started.
        """
        fault = self.faults.take(operation)
        self._before_effect(operation, fault, is_mutation=True)
        with self._state() as state:
            for effect in state["effects"]:
                if effect["operation"] == operation and effect["idempotencyKey"] == token:
                    return effect["result"], False
            result = apply(state)
            state["effects"].append(
                {
                    "operation": operation,
                    "idempotencyKey": token,
                    "params": params,
                    "result": result,
                    "at": self.clock().isoformat(),
                }
            )
        if fault is not None and fault.kind is FaultKind.TIMEOUT_AFTER_EFFECT:
            raise UncertainOutcome(
                f"{self.name}.{operation} timed out after the request was sent; it may have started"
            )
        if fault is not None and fault.kind is FaultKind.CRASH_AFTER_EFFECT:
            os.kill(os.getpid(), signal.SIGKILL)
        return result, True

    def _reconcile_by_key(self, operation: str, key: str) -> ReconcileOutcome:
        lookup = f"reconcile:{operation}"
        self._before_effect(lookup, self.faults.take(lookup), is_mutation=False)
        for effect in self.effects(operation):
            if effect["idempotencyKey"] == key:
                return ReconcileOutcome(status=ReconcileStatus.APPLIED, result=effect["result"])
        return ReconcileOutcome(
            status=ReconcileStatus.FAILED,
            detail=f"no {operation} with idempotency key {key} exists",
        )

    def _before_effect(self, operation: str, fault: Fault | None, *, is_mutation: bool) -> None:
        if fault is None:
            return
        what = f"{self.name}.{operation}"
        match fault.kind:
            case FaultKind.TRANSIENT:
                raise TransientError(f"{what}: service unavailable (503), try again later")
            case FaultKind.PERMISSION_DENIED:
                raise PermissionDenied(
                    f"{what}: the account lacks the permission for this call (403)",
                    permission=self.operation(operation.removeprefix("reconcile:")).permission,
                )
            case FaultKind.FAILURE:
                raise PreconditionFailed(f"{what}: the request was refused (400)")
            case FaultKind.TIMEOUT_BEFORE_EFFECT:
                if fault.delay_s:
                    time.sleep(fault.delay_s)
                if is_mutation:
                    raise UncertainOutcome(f"{what} timed out; it may or may not have happened")
                raise TransientError(f"{what} timed out")
            case FaultKind.SLOW:
                time.sleep(fault.delay_s)
            case FaultKind.CRASH_BEFORE_EFFECT:
                os.kill(os.getpid(), signal.SIGKILL)
            case FaultKind.TIMEOUT_AFTER_EFFECT | FaultKind.CRASH_AFTER_EFFECT:
                if not is_mutation:
                    raise TransientError(f"{what} timed out")

    # State storage.

    def _init_backing(self) -> None:
        assert self._backing is not None
        self._backing.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS service_double (name TEXT PRIMARY KEY, doc TEXT)"
            )
            conn.execute(
                "INSERT OR IGNORE INTO service_double VALUES (?, ?)",
                (self.name, json.dumps(self.empty_state())),
            )

    def _connect(self) -> sqlite3.Connection:
        assert self._backing is not None
        conn = sqlite3.connect(self._backing, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        return conn

    @contextmanager
    def _state(self, *, write: bool = True) -> Iterator[Doc]:
        with self._lock:
            if self._backing is None:
                yield self._memory
                return
            conn = self._connect()
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                row = conn.execute(
                    "SELECT doc FROM service_double WHERE name = ?", (self.name,)
                ).fetchone()
                doc: Doc = json.loads(row[0])
                yield doc
                if write:
                    conn.execute(
                        "UPDATE service_double SET doc = ? WHERE name = ?",
                        (json.dumps(doc), self.name),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            finally:
                conn.close()
