"""The look a SQLite store takes at its files before each transaction (`DatabaseFile.check`):
any one of the database, WAL and shared-memory files made read-only, the database removed
or replaced, is refused by name; files as they were pass.

Checked on plain files, not an open SQLite store: a store whose files became read-only
dies of SIGBUS when it touches them, which is what the check exists to prevent (the
whole path is `tests/cli/test_run_exit_codes.py`'s)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from keep_sdk.errors import StoreUnavailable
from keep_sdk.stores.sql._file import DatabaseFile
from tests.read_only import read_only

NAMES = ("keep.db", "keep.db-wal", "keep.db-shm")


def _watched(folder: Path) -> DatabaseFile:
    for name in NAMES:
        (folder / name).write_bytes(b"x")
    watched = DatabaseFile(folder / "keep.db")
    watched.remember()
    return watched


SUBSETS = [combo for size in range(len(NAMES) + 1) for combo in itertools.combinations(NAMES, size)]


@pytest.mark.parametrize("names", SUBSETS, ids=lambda names: "+".join(names) or "none")
def test_any_of_the_three_files_made_read_only_is_refused_by_name(
    tmp_path: Path, names: tuple[str, ...]
) -> None:
    watched = _watched(tmp_path)
    with read_only([tmp_path / name for name in names]):
        if not names:
            watched.check()
            return
        with pytest.raises(StoreUnavailable) as refused:
            watched.check()
    assert refused.value.reason == "the database file is read-only"
    named = [
        name for name in NAMES if f"{tmp_path / name} was made read-only" in str(refused.value)
    ]
    assert len(named) == 1, refused.value
    assert named[0] in names
    assert str(refused.value) == (
        f"the store file {tmp_path / named[0]} was made read-only while keep was using it; "
        "make it writable again (chmod u+w, chattr -i) and start keep again"
    )


def test_missing_wal_and_shared_memory_files_are_not_refused(tmp_path: Path) -> None:
    watched = _watched(tmp_path)
    for name in NAMES[1:]:
        (tmp_path / name).unlink()
    watched.check()


def test_a_removed_or_replaced_database_is_refused(tmp_path: Path) -> None:
    """The file is held open meanwhile, as SQLite holds it (so its inode is not reused)."""
    watched = _watched(tmp_path)
    database = tmp_path / "keep.db"
    with database.open("rb"):
        database.unlink()
        with pytest.raises(StoreUnavailable) as removed:
            watched.check()
        assert removed.value.reason == "the database file was removed"
        assert str(removed.value) == (
            f"the store file {database} was removed while keep was using it; restore it "
            "from a backup or start with a new store"
        )
        database.write_bytes(b"another file")
        with pytest.raises(StoreUnavailable) as replaced:
            watched.check()
    assert replaced.value.reason == "the database file was replaced"
    assert str(replaced.value) == (
        f"the store file {database} was replaced by another file while keep was using it; "
        "stop every keep process on it and start them again"
    )


def test_a_database_whose_folder_became_a_file_cannot_be_reached(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    watched = _watched(folder)
    folder.rename(tmp_path / "moved")
    folder.write_bytes(b"not a folder")
    with pytest.raises(StoreUnavailable) as unreachable:
        watched.check()
    assert unreachable.value.reason == "Not a directory"
    assert str(unreachable.value) == (
        f"the store file {folder / 'keep.db'} cannot be reached: Not a directory"
    )


def test_nothing_is_checked_before_the_store_remembers_its_file(tmp_path: Path) -> None:
    DatabaseFile(tmp_path / "never-created.db").check()
