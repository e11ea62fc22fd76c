"""Fail a SQL store at its N-th statement or commit, through SQLAlchemy's engine events.

The store does not know: the fault comes from below it, where the database driver
sits, so it holds wherever the store's transactions begin and end (unlike a fault
hook the store itself calls). Positions are counted over every statement the
engine executes (``BEGIN IMMEDIATE`` included) and every commit, in order.

Three ways to fail at a position:

- ``raise``: the statement (or commit) fails with the driver's own error class,
  wrapped by SQLAlchemy exactly as a real failure is; nothing of the transaction
  is kept;
- ``lost-ack``: at a commit, the transaction commits for real and then the
  driver reports an error (the connection dropped before the answer arrived);
- ``terminate`` (PostgreSQL only): another connection terminates this
  connection's server backend (``pg_terminate_backend``) just before the
  statement, so the real server error reaches the store.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import Engine, event
from sqlalchemy.exc import OperationalError

Mode = Literal["raise", "lost-ack", "terminate"]


def _driver_error(dialect: str, message: str) -> Exception:
    if dialect == "postgresql":
        import psycopg

        return psycopg.OperationalError(message)
    return sqlite3.OperationalError(message)


@dataclass
class StatementFaults:
    """Counts positions (statements and commits) of `engine`; fails the armed one once."""

    engine: Engine
    admin_url: str | None = None
    positions: list[str] = field(default_factory=list)
    fail_at: int | None = None
    mode: Mode = "raise"
    message: str = "disk I/O error"
    fired: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        event.listen(self.engine, "before_cursor_execute", self._statement)
        event.listen(self.engine, "commit", self._commit)

    def remove(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self._statement)
        event.remove(self.engine, "commit", self._commit)

    def arm(self, position: int, mode: Mode = "raise", message: str = "disk I/O error") -> None:
        """Fail at the `position`-th position from now (1-based) with the driver's `message`."""
        self.positions.clear()
        self.fired.clear()
        self.fail_at, self.mode, self.message = position, mode, message

    def disarm(self) -> None:
        self.fail_at = None

    def _due(self, what: str) -> bool:
        self.positions.append(what)
        if self.fail_at is None or len(self.positions) != self.fail_at:
            return False
        self.fail_at = None
        self.fired.append(what)
        return True

    def _statement(
        self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        if not self._due(" ".join(statement.split())[:60]):
            return
        dialect = conn.dialect.name
        if self.mode == "terminate" and dialect == "postgresql":
            import psycopg

            assert self.admin_url is not None
            pid = conn.connection.dbapi_connection.info.backend_pid
            with psycopg.connect(self.admin_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
            return
        raise OperationalError(statement, parameters, _driver_error(dialect, self.message))

    def _commit(self, conn: Any) -> None:
        if not self._due("COMMIT"):
            return
        dialect = conn.dialect.name
        if self.mode == "lost-ack":
            conn.connection.dbapi_connection.commit()
            message = "server closed the connection unexpectedly"
        else:
            message = self.message
        raise OperationalError("COMMIT", None, _driver_error(dialect, message))
