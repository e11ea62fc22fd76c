"""Run the store's constant statements on the DBAPI cursor, compiled once per dialect.

SQLAlchemy's ``Connection.execute`` builds an execution context for every call (cache
lookup, bind and result processing set up, a result object); for the few statements a run
executes dozens of times that machinery costs several times the database's own work.
`StatementCache` compiles each constant statement once per engine dialect and keeps what
running it needs: the SQL text, the order of its bind parameters, their processors (the
column types' own, e.g. `UtcTimestamp`, `JsonText`) and the result columns' processors.
`FastConnection.execute` then runs it on the cursor of the connection the transaction
already holds, so it joins that transaction.

What it keeps from SQLAlchemy, so nothing above it can tell the paths apart:

- ``before_cursor_execute`` and ``after_cursor_execute`` listeners of the engine and the
  connection see every statement, with the SQL text and parameters sent (the execution
  context argument is None);
- every error goes through the connection's own error handling: a driver error becomes
  the same `sqlalchemy.exc.DBAPIError` subclass (``IntegrityError``, ``OperationalError``
  …) with ``connection_invalidated`` set on a disconnect (and the connection invalidated),
  an error while binding becomes a ``StatementError``, as they do through ``execute``;
- rows expose their columns by name and by position, with the same Python values.

A statement that cannot be run this way (Python-side column defaults that the parameters
do not supply, expanding or literal-execute parameters, escaped bind names, result column
names that are not identifiers) runs through ``Connection.execute`` unchanged.
"""

from __future__ import annotations

import keyword
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, CursorResult, Dialect, Insert, Select, Update
from sqlalchemy.sql.compiler import SQLCompiler

__all__ = ["FastConnection", "FastResult", "Statement", "StatementCache", "run_driver_sql"]

_Processor = Callable[[Any], Any] | None
Statement = Select[Any] | Insert | Update
"""A statement `FastConnection` runs."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """A statement compiled for one dialect and one set of parameter names."""

    sql: str
    binds: tuple[tuple[str | None, _Processor, Any], ...]
    """In the statement's order: (parameter name, its processor, None), or (None, None,
    the processed value) for a bind parameter the statement fixes (SQLite's ``OFFSET 0``)."""
    names: tuple[str, ...]
    """The bind names in that order (the keys of a ``pyformat`` dialect's parameters)."""
    positional: bool
    row: type[tuple[Any, ...]] | None
    results: tuple[_Processor, ...]
    """Result processors by column position; empty when no column needs one."""


class FastResult:
    """The rows of a statement run by `FastConnection` (all fetched), as far as the store
    uses a result: `all`, `first`, `scalar`, iteration, `rowcount` and `lastrowid`."""

    __slots__ = ("_rows", "lastrowid", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int, lastrowid: int | None) -> None:
        self._rows = rows
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    def all(self) -> list[Any]:
        return self._rows

    def first(self) -> Any:
        return self._rows[0] if self._rows else None

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)


class StatementCache:
    """Compiled plans of constant statements for one engine's dialect.

    Keys hold the statement object itself (constants live as long as their module), so
    only module-level statements belong here: a statement built per call would be
    compiled per call and kept forever.
    """

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._plans: dict[tuple[int, tuple[str, ...]], tuple[Statement, _Plan | None]] = {}

    def plan(self, statement: Statement, names: tuple[str, ...]) -> _Plan | None:
        """The plan of `statement` run with parameters `names`; None: run it through
        SQLAlchemy."""
        key = (id(statement), names)
        found = self._plans.get(key)
        if found is None or found[0] is not statement:
            found = (statement, self._compile(statement, names))
            self._plans[key] = found
        return found[1]

    def _compile(self, statement: Statement, names: tuple[str, ...]) -> _Plan | None:
        compiled = statement.compile(dialect=self.dialect, column_keys=list(names))
        if not isinstance(compiled, SQLCompiler) or _needs_sqlalchemy(compiled, names):
            return None
        processors = compiled._bind_processors
        if not all(callable(p) for p in processors.values()):
            return None
        order = compiled.positiontup or sorted(compiled.bind_names.values())
        row, results = self._result_shape(compiled)
        if compiled._result_columns and row is None:
            return None
        binds: list[tuple[str | None, _Processor, Any]] = []
        for name in order:
            process = cast(_Processor, processors.get(name))
            if name in names:
                binds.append((name, process, None))
            else:
                value = compiled.binds[name].value
                binds.append((None, None, value if process is None else process(value)))
        return _Plan(
            sql=compiled.string,
            binds=tuple(binds),
            names=tuple(order),
            positional=bool(compiled.positional),
            row=row,
            results=results,
        )

    def _result_shape(
        self, compiled: SQLCompiler
    ) -> tuple[type[tuple[Any, ...]] | None, tuple[_Processor, ...]]:
        columns = compiled._result_columns
        if not columns:
            return None, ()
        keys = [column.keyname for column in columns]
        usable = all(k.isidentifier() and not keyword.iskeyword(k) for k in keys)
        if not usable or len(set(keys)) != len(keys) or any(k.startswith("_") for k in keys):
            return None, ()
        processors = tuple(
            column.type._cached_result_processor(self.dialect, None) for column in columns
        )
        row = namedtuple("Row", keys)  # type: ignore[misc]
        return row, processors if any(processors) else ()


def _needs_sqlalchemy(compiled: SQLCompiler, names: tuple[str, ...]) -> bool:
    return bool(
        compiled.insert_prefetch
        or compiled.update_prefetch
        or compiled.literal_execute_params
        or compiled.post_compile_params
        or compiled.escaped_bind_names
        or any(b.expanding or b.callable is not None for b in compiled.binds.values())
        or not set(names) <= set(compiled.bind_names.values())
        or any(b.required for name, b in compiled.binds.items() if name not in names)
    )


class FastConnection:
    """`execute` for constant statements on `conn`'s DBAPI connection, in its transaction."""

    __slots__ = ("_cache", "_cursor", "conn")

    def __init__(self, conn: Connection, cache: StatementCache) -> None:
        self.conn = conn
        self._cache = cache
        self._cursor: Any = None

    def execute(
        self, statement: Statement, parameters: Mapping[str, Any] | None = None
    ) -> FastResult | CursorResult[Any]:
        """Run `statement` (a module constant) with `parameters`: a `FastResult`, or
        SQLAlchemy's own result when the statement needs SQLAlchemy."""
        params = parameters or {}
        plan = self._cache.plan(statement, tuple(sorted(params)))
        if plan is None:
            return self.conn.execute(statement, dict(params))
        return self._run(plan, params)

    def _run(self, plan: _Plan, params: Mapping[str, Any]) -> FastResult:
        conn = self.conn
        sql = plan.sql
        try:
            bound = _bind(plan, params)
        except BaseException as exc:
            conn._handle_dbapi_exception(exc, sql, [dict(params)], None, None)
        cursor = self._cursor
        if cursor is None:
            cursor = self._cursor = conn.connection.cursor()
        listening = conn._has_events or conn.engine._has_events
        if listening:
            for listener in conn.dispatch.before_cursor_execute:
                sql, bound = listener(conn, cursor, sql, bound, None, False)
        try:
            cursor.execute(sql, bound)
            fetched = cursor.fetchall() if cursor.description is not None else []
            if listening:
                conn.dispatch.after_cursor_execute(conn, cursor, sql, bound, None, False)
        except BaseException as exc:
            wrap = isinstance(exc, conn.dialect.loaded_dbapi.Error)
            self._cursor = None
            conn._handle_dbapi_exception(exc, sql if wrap else None, bound, cursor, None)
        return FastResult(_rows(plan, fetched), cursor.rowcount, getattr(cursor, "lastrowid", None))


def run_driver_sql(conn: Connection, sql: str) -> None:
    """Run `sql` (no parameters, no rows: ``BEGIN IMMEDIATE``) on `conn`'s DBAPI cursor, as
    ``exec_driver_sql`` would: listeners see it, errors are translated the same way."""
    cursor = conn.connection.cursor()
    params: tuple[Any, ...] = ()
    listening = conn._has_events or conn.engine._has_events
    if listening:
        for listener in conn.dispatch.before_cursor_execute:
            sql, params = listener(conn, cursor, sql, params, None, False)
    try:
        cursor.execute(sql, params)
        if listening:
            conn.dispatch.after_cursor_execute(conn, cursor, sql, params, None, False)
        cursor.close()
    except BaseException as exc:
        wrap = isinstance(exc, conn.dialect.loaded_dbapi.Error)
        conn._handle_dbapi_exception(exc, sql if wrap else None, params, cursor, None)


def _bind(plan: _Plan, params: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
    values = [
        fixed if name is None else params[name] if process is None else process(params[name])
        for name, process, fixed in plan.binds
    ]
    if plan.positional:
        return values
    return dict(zip(plan.names, values, strict=True))


def _rows(plan: _Plan, fetched: list[Any]) -> list[Any]:
    row = plan.row
    if row is None:
        return fetched
    processors = plan.results
    if not processors:
        return [row(*values) for values in fetched]
    return [
        row(*[v if p is None else p(v) for p, v in zip(processors, values, strict=True)])
        for values in fetched
    ]
