"""The file of a SQLite store, watched for being removed, replaced or made read-only while
it is open.

SQLite keeps writing to a database file that was deleted (the open descriptor still
works), so without a look every later commit would go to a file nobody can open again.
A database, WAL or shared-memory file made read-only under an open store makes SQLite
touch shared memory it could not grow, and the process dies of SIGBUS with no message;
the look before each transaction turns that into `StoreUnavailable` (a change in the
middle of one transaction is not seen until the next).
"""

from __future__ import annotations

import os
from pathlib import Path

from keep_sdk.errors import StoreUnavailable

__all__ = ["DatabaseFile"]

_BESIDE = ("-wal", "-shm")
"""The files SQLite keeps next to a database in WAL mode."""


class DatabaseFile:
    """The SQLite database at `path`, as it was when `remember` was called."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._identity: tuple[int, int] | None = None
        self._main = str(path)
        self._written = (self._main, *(str(path.with_name(path.name + s)) for s in _BESIDE))

    def remember(self) -> None:
        """Record which file `path` is now (call once the store opened it)."""
        found = os.stat(self.path)
        self._identity = (found.st_dev, found.st_ino)

    def check(self) -> None:
        """`StoreUnavailable` when the file was removed or replaced since `remember`, or it
        or its WAL or shared-memory file cannot be written now."""
        if self._identity is None:
            return
        try:
            now = os.stat(self._main)
        except FileNotFoundError:
            raise StoreUnavailable(
                f"the store file {self.path} was removed while keep was using it; restore "
                "it from a backup or start with a new store",
                reason="the database file was removed",
            ) from None
        except OSError as exc:
            raise StoreUnavailable(
                f"the store file {self.path} cannot be reached: {exc.strerror}",
                reason=str(exc.strerror),
            ) from None
        for path in self._written:
            if not os.access(path, os.W_OK) and os.path.exists(path):
                raise StoreUnavailable(
                    f"the store file {path} was made read-only while keep was using it; "
                    "make it writable again (chmod u+w, chattr -i) and start keep again",
                    reason="the database file is read-only",
                )
        if (now.st_dev, now.st_ino) != self._identity:
            raise StoreUnavailable(
                f"the store file {self.path} was replaced by another file while keep was "
                "using it; stop every keep process on it and start them again",
                reason="the database file was replaced",
            )
