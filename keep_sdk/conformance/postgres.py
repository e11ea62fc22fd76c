"""A throwaway PostgreSQL server for tests: initdb into a directory, serve on loopback, stop.

Used by keep-sdk's own tests and reusable by a store plugin's tests::

    server = PostgresServer.start(tmp_path / "pg")
    url = server.create_database("keep_test")   # postgresql://postgres@127.0.0.1:PORT/keep_test
    ...
    server.stop()

Run as root, the server runs as the ``postgres`` user, which cannot enter a
root-only folder such as pytest's ``/tmp/pytest-of-root``. The server's files
then live in a fresh folder under the system temporary directory (given to
``postgres``, removed by `stop`) instead of `directory`; no permission of any
other folder is changed.

When the environment variable ``KEEP_TEST_POSTGRES_URL`` is set,
`postgres_server_from_env` uses that server instead of starting one. Missing
binaries raise `PostgresUnavailable` with a message saying what to install:
tests must fail, never skip, when PostgreSQL is missing.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TEST_URL_ENV", "PostgresServer", "PostgresUnavailable", "find_postgres_bin"]

TEST_URL_ENV = "KEEP_TEST_POSTGRES_URL"
"""Set to a ``postgresql://`` URL (a role allowed to CREATE DATABASE) to use that server."""


class PostgresUnavailable(RuntimeError):
    """PostgreSQL binaries are missing or the server would not start."""


def find_postgres_bin() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``.

    Looks on ``PATH``, then in ``/usr/lib/postgresql/*/bin`` (newest first).
    """
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
        reverse=True,
    )
    if candidates:
        return Path(candidates[0]).parent
    raise PostgresUnavailable(
        "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or in "
        "/usr/lib/postgresql/*/bin; install PostgreSQL (e.g. apt-get install postgresql) "
        f"or set {TEST_URL_ENV} to a server the tests may use"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _as_postgres_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    runuser = shutil.which("runuser")
    if runuser is None:
        raise PostgresUnavailable("running as root needs `runuser` to start PostgreSQL as postgres")
    return [runuser, "-u", "postgres", "--", *command]


def _postgres_ids() -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable(
            "running as root, but there is no `postgres` user to run the server as"
        ) from None
    return entry.pw_uid, entry.pw_gid


def _server_home(directory: Path) -> tuple[Path, bool]:
    """Where the server's files go, and whether this module created it (and removes it).

    Not root: `directory`. Root: a new folder under the system temporary directory,
    owned by ``postgres``; every folder above it must already let others through,
    otherwise `PostgresUnavailable` says so (nothing is chmod-ed)."""
    if os.geteuid() != 0:
        return directory, False
    uid, gid = _postgres_ids()
    base = Path(tempfile.gettempdir()).resolve()
    for folder in (base, *base.parents):
        if not folder.stat().st_mode & 0o001:
            raise PostgresUnavailable(
                f"running as root, the server runs as postgres, which cannot pass {folder}; "
                "set TMPDIR to a folder every user can reach (such as /tmp)"
            )
    home = Path(tempfile.mkdtemp(prefix="keep-pg-", dir=base))
    os.chown(home, uid, gid)
    return home, True


@dataclass
class PostgresServer:
    """A PostgreSQL server the tests own (started here) or borrow (from a URL)."""

    admin_url: str
    data_dir: Path | None = None
    bin_dir: Path | None = None
    databases: list[str] = field(default_factory=list)
    owned_dir: Path | None = None
    """A folder `start` created for the server (run as root), removed by `stop`."""
    options: str = ""
    """The server options `start` gave (port, sockets), which `up` gives again."""

    @classmethod
    def start(cls, directory: Path, *, fsync: bool = True) -> PostgresServer:
        """initdb into `directory` (as root: a folder of its own under the system temporary
        directory, see the module) and start a server on a free loopback port.

        ``fsync=False`` starts it with ``fsync=off``: a commit is written to the operating
        system but not flushed to the disk, so it survives any process being killed (the
        server's included) and is lost only if the machine itself goes down. For test
        sessions that kill processes, never machines; benchmarks keep the default."""
        bin_dir = find_postgres_bin()
        directory.mkdir(parents=True, exist_ok=True)
        home, owned = _server_home(directory)
        data_dir = home / "data"
        socket_dir = home / "socket"
        socket_dir.mkdir(exist_ok=True)
        if owned:
            uid, gid = _postgres_ids()
            os.chown(socket_dir, uid, gid)
        port = _free_port()
        _run(
            _as_postgres_user(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(data_dir),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            ),
            "initdb",
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={socket_dir} "
            f"-c fsync={'on' if fsync else 'off'} -c max_connections=100 -c shared_buffers=64MB"
        )
        _run(
            _as_postgres_user(
                [
                    str(bin_dir / "pg_ctl"),
                    "-D",
                    str(data_dir),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    "60",
                    "-l",
                    str(home / "server.log"),
                    "start",
                ]
            ),
            "pg_ctl start",
        )
        return cls(
            admin_url=f"postgresql://postgres@127.0.0.1:{port}/postgres",
            data_dir=data_dir,
            bin_dir=bin_dir,
            owned_dir=home if owned else None,
            options=options,
        )

    @classmethod
    def from_env(cls) -> PostgresServer | None:
        """The server named by ``KEEP_TEST_POSTGRES_URL``, or None when it is not set."""
        url = os.environ.get(TEST_URL_ENV)
        return cls(admin_url=url) if url else None

    def create_database(self, prefix: str = "keep_test") -> str:
        """Create a new empty database and return its URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.databases.append(name)
        base, _, _ = self.admin_url.rpartition("/")
        return f"{base}/{name}"

    def restart(self, mode: str = "fast") -> None:
        """Restart a server started here (``pg_ctl restart -m fast|immediate|smart``): every
        connection is dropped; the server answers again when this returns."""
        if self.data_dir is None or self.bin_dir is None:
            raise PostgresUnavailable("only a server started by the tests can be restarted")
        _run(
            _as_postgres_user(
                [
                    str(self.bin_dir / "pg_ctl"),
                    "-D",
                    str(self.data_dir),
                    "-m",
                    mode,
                    "-w",
                    "-t",
                    "60",
                    "-l",
                    str(self.data_dir.parent / "server.log"),
                    "restart",
                ]
            ),
            "pg_ctl restart",
        )

    def down(self) -> None:
        """Shut a server started here down (fast), keeping its data for `up`."""
        self._pg_ctl("-m", "fast", "-w", "stop")

    def up(self) -> None:
        """Start a server `down` shut down, on the same port; it answers when this returns."""
        assert self.data_dir is not None
        self._pg_ctl(
            "-o",
            self.options,
            "-w",
            "-t",
            "60",
            "-l",
            str(self.data_dir.parent / "server.log"),
            "start",
        )

    def _pg_ctl(self, *arguments: str) -> None:
        if self.data_dir is None or self.bin_dir is None:
            raise PostgresUnavailable(
                "only a server started by the tests can be stopped and started"
            )
        _run(
            _as_postgres_user([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), *arguments]),
            f"pg_ctl {arguments[-1]}",
        )

    def stop(self) -> None:
        """Stop a server started here (fast shutdown), or drop the databases made on a borrowed
        one."""
        if self.data_dir is None or self.bin_dir is None:
            self._drop_databases()
            return
        subprocess.run(
            _as_postgres_user(
                [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"]
            ),
            check=False,
            capture_output=True,
        )
        if self.owned_dir is not None:
            shutil.rmtree(self.owned_dir, ignore_errors=True)

    def _drop_databases(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            for name in self.databases:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.databases.clear()


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PostgresUnavailable(
            f"{what} failed (exit {done.returncode}): {done.stderr.strip() or done.stdout.strip()}"
        )
