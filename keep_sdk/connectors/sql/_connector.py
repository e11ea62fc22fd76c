"""The SQL connector: named statements run with bound parameters through SQLAlchemy.

Scripts never send SQL: they call an operation by name with arguments, which
reach the database only as bound parameters. Each call runs in its own
transaction. Failures are classified:

| what happened | classified as |
|---|---|
| cannot connect, or the server broke off before the commit | `TransientError` (rolled back) |
| deadlock or serialization failure | `TransientError` (rolled back) |
| a constraint or the database refused the statement | `PreconditionFailed` |
| the connection broke during COMMIT of a mutation | `UncertainOutcome` (reconcile) |
| the call ran past `timeout_s` (connect, statement, fetch) | `TransientError` (rolled back) |
| the rows passed `max_result_rows` / `max_result_bytes` while fetched | `PreconditionFailed` |

Rows are fetched in batches and counted as they arrive (a read uses a server-side
cursor where the database has one), so a huge result is refused without being held.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import time
import uuid
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, Engine, Result
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, SQLAlchemyError

from keep_sdk.connectors._limits import CallLimits
from keep_sdk.connectors.configured import ConfiguredConnector
from keep_sdk.connectors.secrets import secrets_in
from keep_sdk.connectors.sql._settings import IDEMPOTENCY_PARAM, SqlSettings, bind_names
from keep_sdk.errors import PreconditionFailed, TransientError, UncertainOutcome
from keep_sdk.model import OperationKind, ReconcileOutcome, ReconcileStatus

if TYPE_CHECKING:
    from keep_sdk.connectors.base import Connector

__all__ = ["SqlConnector", "build"]

_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})


def _json_value(value: Any) -> JsonValue:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict | list):
        return json.loads(json.dumps(value, default=str))  # type: ignore[no-any-return]
    return str(value)


_BATCH = 256
_QUERY_CANCELED = "57014"


class _TooLarge(Exception):
    """The result passed max_result_rows or max_result_bytes while it was fetched."""


class _Late(Exception):
    """The call's deadline passed while its rows were fetched."""


def _rows(
    result: Result[Any], *, max_rows: int, max_bytes: int, deadline: float
) -> list[dict[str, JsonValue]]:
    """The rows of `result` as JSON, fetched `_BATCH` at a time within the caps and deadline."""
    rows: list[dict[str, JsonValue]] = []
    size = 0
    mappings = result.mappings()
    try:
        while batch := mappings.fetchmany(_BATCH):
            for row in batch:
                converted = {key: _json_value(v) for key, v in row.items()}
                size += len(json.dumps(converted, separators=(",", ":"), ensure_ascii=False))
                rows.append(converted)
                if len(rows) > max_rows:
                    raise _TooLarge(f"more than {max_rows} rows (max_result_rows)")
                if size > max_bytes:
                    raise _TooLarge(f"more than {max_bytes} bytes (max_result_bytes)")
            if time.monotonic() > deadline:
                raise _Late
    finally:
        result.close()
    return rows


def _param(value: JsonValue) -> Any:
    return json.dumps(value) if isinstance(value, dict | list) else value


def _reason(exc: SQLAlchemyError) -> str:
    original = getattr(exc, "orig", None)
    return " ".join(str(original if original is not None else exc).split())[:300]


def _sqlstate(exc: SQLAlchemyError) -> str | None:
    original = getattr(exc, "orig", None)
    return getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)


class SqlConnector(ConfiguredConnector):
    """A database whose named statements are declared in ``keep.toml`` (docs/connectors-sql.md)."""

    settings: SqlSettings

    def __init__(self, settings: SqlSettings) -> None:
        self.settings = settings
        self.limits = CallLimits(
            rate_per_s=settings.rate_limit_per_s, max_concurrency=settings.max_concurrency
        )
        url = settings.revealed_url()
        options: dict[str, Any] = {"pool_pre_ping": True}
        self._sqlite = url.startswith("sqlite")
        if self._sqlite:
            options["connect_args"] = {
                "check_same_thread": False,
                "timeout": settings.timeout_s,
            }
        elif url.startswith("postgresql"):
            options["connect_args"] = {"connect_timeout": max(1, int(settings.timeout_s))}
        self._engine: Engine = create_engine(url, **options)

    def close(self) -> None:
        """Close the connection pool."""
        self._engine.dispose()

    def call_operation(
        self, js_name: str, arguments: dict[str, JsonValue], *, idempotency_key: str | None
    ) -> JsonValue:
        """Run the statement `js_name` in its own transaction; classify what fails."""
        op = self.settings.operations[js_name]
        what = f"ctx.{self.name}.{js_name}"
        params = {name: _param(arguments[name]) for name in bind_names(op.sql) if name in arguments}
        mutation = op.kind is OperationKind.MUTATION
        if mutation and IDEMPOTENCY_PARAM in bind_names(op.sql):
            params[IDEMPOTENCY_PARAM] = idempotency_key
        with self.limits.slot():
            deadline = time.monotonic() + self.settings.timeout_s
            conn = self._connect(what, deadline)
            try:
                value = self._execute(conn, op.sql, params, what, kind=op.kind, deadline=deadline)
                self._commit(conn, what, mutation=mutation)
            finally:
                conn.close()
        return value

    def reconcile_operation(
        self, js_name: str, arguments: dict[str, JsonValue], idempotency_key: str
    ) -> ReconcileOutcome:
        """Run the mutation's lookup: a row means applied (the row is the result), none not."""
        op = self.settings.operations[js_name]
        assert op.reconcile is not None
        lookup = self.settings.lookups[op.reconcile]
        what = f"reconcile of ctx.{self.name}.{js_name} (lookup {op.reconcile})"
        names = bind_names(lookup.sql)
        params = {name: _param(arguments[name]) for name in names if name in arguments}
        if IDEMPOTENCY_PARAM in names:
            params[IDEMPOTENCY_PARAM] = idempotency_key
        with self.limits.slot():
            deadline = time.monotonic() + self.settings.timeout_s
            conn = self._connect(what, deadline)
            try:
                rows = self._execute(
                    conn, lookup.sql, params, what, kind=OperationKind.READ, deadline=deadline
                )
                conn.rollback()
            finally:
                conn.close()
        assert isinstance(rows, list)
        if rows:
            return ReconcileOutcome(status=ReconcileStatus.APPLIED, result=rows[0])
        return ReconcileOutcome(
            status=ReconcileStatus.FAILED, detail=f"{what}: no row has this idempotency key"
        )

    def _connect(self, what: str, deadline: float) -> Connection:
        """A connection whose statements end by `deadline` (interrupted, or cancelled by
        PostgreSQL's statement_timeout)."""
        try:
            conn = self._engine.connect()
            left_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            if self._sqlite:
                raw = conn.connection.driver_connection
                assert raw is not None
                raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
            elif conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SET statement_timeout = {left_ms}")
            return conn
        except SQLAlchemyError as exc:
            raise TransientError(
                f"{what}: cannot connect to the database of connector {self.name!r}: "
                f"{_reason(exc)}; nothing was run. Check that the database runs and that url "
                "(and the secret it references) is right"
            ) from None

    def _execute(
        self,
        conn: Connection,
        sql: str,
        params: dict[str, Any],
        what: str,
        *,
        kind: OperationKind,
        deadline: float,
    ) -> JsonValue:
        def fetch(result: Result[Any]) -> list[dict[str, JsonValue]]:
            return _rows(
                result,
                max_rows=self.settings.max_result_rows,
                max_bytes=self.settings.max_result_bytes,
                deadline=deadline,
            )

        try:
            if kind is OperationKind.MUTATION:
                result = conn.execute(text(sql), params)
                outcome: dict[str, JsonValue] = {"rowcount": result.rowcount}
                if result.returns_rows:
                    outcome["rows"] = list[JsonValue](fetch(result))
                return outcome
            result = conn.execution_options(stream_results=True).execute(text(sql), params)
            rows = fetch(result) if result.returns_rows else []
        except _TooLarge as exc:
            conn.rollback()
            raise PreconditionFailed(
                f"{what}: the result has {exc}; it was not fetched further and nothing was "
                "committed. Narrow the statement (a LIMIT, fewer columns) or raise the cap in "
                "keep.toml"
            ) from None
        except _Late:
            conn.rollback()
            raise self._late(what) from None
        except SQLAlchemyError as exc:
            conn.rollback()
            if self._timed_out(exc, deadline):
                raise self._late(what) from None
            raise self._refused(exc, what) from None
        if kind is OperationKind.READ_BY_ID:
            return rows[0] if rows else None
        return rows  # type: ignore[return-value]

    def _commit(self, conn: Connection, what: str, *, mutation: bool) -> None:
        if not mutation:
            conn.rollback()
            return
        try:
            conn.commit()
        except SQLAlchemyError as exc:
            raise UncertainOutcome(
                f"{what}: the commit did not confirm ({_reason(exc)}); it may have taken effect"
            ) from None

    def _timed_out(self, exc: SQLAlchemyError, deadline: float) -> bool:
        if _sqlstate(exc) == _QUERY_CANCELED:
            return True
        return self._sqlite and "interrupted" in _reason(exc) and time.monotonic() > deadline

    def _late(self, what: str) -> TransientError:
        return TransientError(
            f"{what}: the call ran past timeout_s ({self.settings.timeout_s:g} s) and was "
            "stopped; nothing was committed"
        )

    def _refused(self, exc: SQLAlchemyError, what: str) -> Exception:
        reason = _reason(exc)
        if _sqlstate(exc) in _RETRYABLE_SQLSTATES:
            return TransientError(f"{what}: {reason}; rolled back, try again")
        if isinstance(exc, IntegrityError):
            return PreconditionFailed(f"{what} was refused by a constraint: {reason}")
        if isinstance(exc, OperationalError) or (
            isinstance(exc, DBAPIError) and exc.connection_invalidated
        ):
            return TransientError(
                f"{what}: the database broke off before the commit ({reason}); nothing was "
                "committed"
            )
        return PreconditionFailed(f"{what} was refused by the database: {reason}")


def build(name: str, settings: SqlSettings) -> Connector:
    """The `SqlConnector` instance `name` with the statements of `settings`."""
    specs = [
        op.spec(name, op_name, reconcilable=op.reconcile is not None)
        for op_name, op in sorted(settings.operations.items())
    ]
    cls = SqlConnector.define(
        name,
        specs,
        description=settings.description or "SQL database",
        secrets=secrets_in(settings),
    )
    return cls(settings)
