"""Issue 17, defect 2: one line instead of a traceback; looking never creates anything."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.cli.terminal import ALL_GRANTS, DEMO, Result, keep, run_demo

LOOKING = ("status", "events", "runs", "ledger")


def one_line_error(done: Result, code: int, *needles: str) -> None:
    assert done.code == code, (done.out, done.err)
    lines = done.err.strip().splitlines()
    assert len(lines) == 1, done.err
    assert lines[0].startswith("error: "), done.err
    assert "Traceback" not in done.err + done.out
    for needle in needles:
        assert needle in lines[0]


def files_under(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


def test_keep_run_on_random_bytes_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "noise.js"
    script.write_bytes(bytes(range(256)) * 4)
    one_line_error(
        keep("run", str(script), "--store", f"sqlite:///{tmp_path / 'keep.db'}"),
        2,
        "is not UTF-8 text",
    )
    assert not (tmp_path / "keep.db").exists()


@pytest.mark.parametrize("damage", ["random", "truncated", "text"])
def test_a_broken_keep_db_is_one_line_for_every_command(tmp_path: Path, damage: str) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    assert run_demo(store, *ALL_GRANTS).code == 0
    db = tmp_path / "keep.db"
    for leftover in tmp_path.glob("keep.db-*"):
        leftover.unlink()
    if damage == "random":
        db.write_bytes(os.urandom(20_000))
    elif damage == "truncated":
        db.write_bytes(db.read_bytes()[:1500])
    else:
        db.write_text("this is not a database\n" * 100)
    for command in LOOKING:
        one_line_error(keep(command, "--store", store), 1, "cannot open the store")
    one_line_error(
        keep("run", str(DEMO), "--store", store, "--until-idle", "--isolation", "in-process"),
        1,
        "cannot open the store",
    )


@pytest.mark.parametrize("query", ["busy_timeout=abc", "busy_timeout=1e3", "synchronous=sometimes"])
def test_bad_sqlite_url_options_are_one_line(tmp_path: Path, query: str) -> None:
    store = f"sqlite:///{tmp_path / 'x.db'}?{query}"
    one_line_error(
        keep("run", str(DEMO), "--store", store, "--until-idle", "--isolation", "in-process"), 1
    )
    for command in LOOKING:
        assert keep(command, "--store", store).code == 1


def test_a_store_under_a_folder_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("a file, not a folder")
    store = f"sqlite:///{blocker / 'sub' / 'keep.db'}"
    one_line_error(
        keep("run", str(DEMO), "--store", store, "--until-idle", "--isolation", "in-process"),
        1,
        "cannot open",
    )


def test_looking_at_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'nowhere' / 'keep.db'}"
    for command in LOOKING:
        for extra in ((), ("--json",)):
            one_line_error(keep(command, "--store", store, *extra), 1, "there is no keep store")
    assert list(tmp_path.iterdir()) == []


def test_looking_never_creates_doubles_db(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    assert run_demo(store, *ALL_GRANTS).code == 0
    (tmp_path / "doubles.db").unlink()
    for leftover in tmp_path.glob("doubles.db-*"):
        leftover.unlink()
    before = files_under(tmp_path)
    for command in LOOKING:
        assert keep(command, "--store", store).code == 0
    assert not (tmp_path / "doubles.db").exists()
    assert {p for p in files_under(tmp_path) if "doubles" in p.name} == set()
    assert {p for p in files_under(tmp_path) - before if not p.name.startswith("keep.db")} == set()


def test_status_on_a_read_only_store_folder(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    store = f"sqlite:///{folder / 'keep.db'}"
    assert run_demo(store, *ALL_GRANTS).code == 0
    (folder / "doubles.db").unlink()
    folder.chmod(0o555)
    try:
        done = keep("status", "--store", store)
        if done.code != 0:
            one_line_error(done, 1)
        assert "Traceback" not in done.err
        assert not (folder / "doubles.db").exists()
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def test_conformance_on_a_file_that_is_not_a_store_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "keep.db"
    db.write_text("not a database\n" * 200)
    one_line_error(keep("conformance", "--store", f"sqlite:///{db}"), 1, "cannot open the store")


@pytest.mark.parametrize(
    "args",
    [
        ("skip", "evt_x"),
        ("resolve", "run_x", "--skip"),
        ("pause", "w"),
        ("resume", "w"),
        ("grant", "w", "sheets.write"),
        ("revoke", "w", "sheets.write"),
        ("publish", "t", "--message-id", "m", "--title", "T"),
    ],
)
def test_acting_on_a_missing_store_creates_nothing(tmp_path: Path, args: tuple[str, ...]) -> None:
    store = f"sqlite:///{tmp_path / 'nowhere' / 'keep.db'}"
    one_line_error(keep(*args, "--store", store), 1, "there is no keep store")
    assert list(tmp_path.iterdir()) == []
