"""The file of a SQLite store, watched for being removed or replaced while it is open.

SQLite keeps writing to a database file that was deleted (the open descriptor still
works), so without a look every later commit would go to a file nobody can open again.
"""

from __future__ import annotations

import os
from pathlib import Path

from keep_sdk.errors import StoreUnavailable

__all__ = ["DatabaseFile"]


class DatabaseFile:
    """The SQLite database at `path`, as it was when `remember` was called."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._identity: tuple[int, int] | None = None

    def remember(self) -> None:
        """Record which file `path` is now (call once the store opened it)."""
        found = os.stat(self.path)
        self._identity = (found.st_dev, found.st_ino)

    def check(self) -> None:
        """`StoreUnavailable` when the file was removed or replaced since `remember`."""
        if self._identity is None:
            return
        try:
            now = os.stat(self.path)
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
        if (now.st_dev, now.st_ino) != self._identity:
            raise StoreUnavailable(
                f"the store file {self.path} was replaced by another file while keep was "
                "using it; stop every keep process on it and start them again",
                reason="the database file was replaced",
            )
