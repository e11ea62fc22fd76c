"""The commit mark of a SQLite store: the newest mutation intent, kept in a file beside the
database so that a database that lost committed transactions is noticed when it is opened.

A mutation intent is written before its external call. If the database later holds an
older newest intent than the mark recorded (the ``-wal`` file was deleted after a crash, an
older copy was put in its place), runs that already called out would run and call again;
`check` refuses such a database with `StoreRolledBack` instead.

The mark is the ``seq`` of the newest ``keep_ledger`` row, which SQLite numbers upwards
and keep never deletes, so it costs no statement: the intent's ``INSERT`` returns it. The
file holds one fixed-width decimal number; writers take an exclusive ``flock`` and only
ever raise it, so several processes on one database keep the largest. It is written after
the intent's transaction committed and before the call, without an ``fsync``: a power
loss can leave the mark behind the database (that is never refused), never ahead of it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from keep_sdk.errors import StoreRolledBack, StoreUnavailable

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no flock; the thread lock still applies
    fcntl = None  # type: ignore[assignment]

__all__ = ["MARK_SUFFIX", "CommitMark"]

MARK_SUFFIX = "-mark"
"""The mark of ``keep.db`` is ``keep.db-mark``, beside SQLite's ``-wal`` and ``-shm``."""

_WIDTH = 20


class CommitMark:
    """The mark file of the SQLite database at `database`."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.path = Path(f"{database}{MARK_SUFFIX}")
        self._lock = threading.Lock()
        self._fd: int | None = None

    def read(self) -> int | None:
        """The recorded newest intent; None when there is no mark file yet."""
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return None
        return self._parse(text)

    def read_quietly(self) -> int | None:
        """As `read`, with a damaged mark read as None."""
        try:
            return self.read()
        except StoreRolledBack:
            return None

    def check(self, newest: int, *, store: str) -> None:
        """Refuse a database whose newest intent `newest` is older than the mark."""
        mark = self.read()
        if mark is None or mark <= newest:
            return
        wal = f"{self.database}-wal"
        raise StoreRolledBack(
            f"the store {store} went back in time: {self.database} holds mutation intents "
            f"up to #{newest}, but #{mark} was committed to it (recorded in {self.path}). "
            "Committed runs were lost, for example because the "
            f"{Path(wal).name} file was deleted after a crash or an older copy of the "
            "database was put in its place; running on would repeat mutations that were "
            "already made, so nothing was run. Put the missing file back if you still have "
            f"it (stop every keep process first, then restore {wal} beside the database). "
            "If you restored this database on purpose, accept it as it is with "
            f"`keep accept-rollback --store {store}`: the lost runs' events will run again.",
            database=str(self.database),
            mark=mark,
            found=newest,
        )

    def advance(self, newest: int) -> None:
        """Record `newest` unless the mark is already at or past it (all processes)."""
        try:
            with self._lock:
                fd = self._open()
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    current = self._parse(os.pread(fd, _WIDTH + 1, 0))
                    if current is None or current < newest:
                        os.pwrite(fd, f"{newest:0{_WIDTH}d}\n".encode(), 0)
                finally:
                    if fcntl is not None:
                        fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError as exc:
            raise StoreUnavailable(
                f"the commit mark {self.path} could not be written ({exc.strerror}); make "
                "the database's folder writable. The mutation was recorded but not called.",
                reason=str(exc),
            ) from exc

    def reset(self, newest: int) -> None:
        """Set the mark to `newest`, also downwards (a person accepted a restored database);
        whatever a damaged mark held beyond the number is cut off."""
        with self._lock:
            fd = self._open()
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                os.pwrite(fd, f"{newest:0{_WIDTH}d}\n".encode(), 0)
                os.ftruncate(fd, _WIDTH + 1)
                os.fsync(fd)
            finally:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the mark file (it is reopened if used again)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def _parse(self, text: bytes) -> int | None:
        stripped = text.strip()
        if not stripped:
            return None
        if not stripped.isdigit():
            raise StoreRolledBack(
                f"the commit mark {self.path} is damaged (it holds {stripped[:40]!r}, not a "
                "number), so keep cannot tell whether the database lost committed runs. "
                "If the database is as it should be, accept it with `keep accept-rollback`.",
                database=str(self.database),
            )
        return int(stripped)
