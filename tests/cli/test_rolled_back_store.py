"""Issue 12, item 7 from outside: a real ``keep worker`` is SIGKILLed mid-workload, its
store's ``-wal`` file is deleted, and nothing starts again on what is left.

Before the commit mark, the restart ran the lost runs again and the sheet got their rows
twice. Now every command refuses the store in one line that names the file and what to
do, the sheet keeps each row once, and ``keep accept-rollback`` is the explicit way on.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from keep_sdk.connectors.builtin import Sheets
from keep_sdk.stores import Publication, SqlStore
from tests.cli.terminal import keep

ROOT = Path(__file__).parents[2]
EVENTS = 200

COPY = """
export default Keep.workflow({
  name: "copy",
  topics: { "item.added": {} },
  consumers: {
    copyRow: Keep.consumer({
      subscribe: ["item.added"],
      async prepare(ctx, state) {
        const [item] = await ctx.peek("item.added", { limit: 1 });
        if (!item) return { reservations: [], data: {} };
        return {
          reservations: [{ topic: "item.added", ids: [item.messageId] }],
          data: { id: item.messageId },
          ui: { title: `Copy ${item.messageId}` },
        };
      },
      async mutate(ctx, prepared) {
        await ctx.sheets.appendRow({ spreadsheetId: "copies", values: [prepared.data.id] });
      },
      async next(ctx, prepared, mutationResult) {},
    }),
  },
});
"""


def _keep_process(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "keep_sdk", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
    )


def _rows(doubles: Path) -> list[str]:
    return [e["params"]["values"][0] for e in Sheets(backing=doubles).effects("appendRow")]


def _refused_in_one_line(done: subprocess.CompletedProcess[str], db: Path) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert lines[0].startswith("error: the store ")
    assert "went back in time" in lines[0]
    assert str(db) in lines[0]
    assert "keep accept-rollback" in lines[0]


@pytest.mark.slow
def test_a_deleted_wal_after_a_kill_is_refused_and_repeats_no_mutation(tmp_path: Path) -> None:
    db, doubles = tmp_path / "keep.db", tmp_path / "doubles.db"
    url = f"sqlite:///{db}"
    script = tmp_path / "copy.js"
    script.write_text(COPY)
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"sheets": {"spreadsheets": {"copies": {"rows": []}}}}))
    deployed = keep(
        "run", str(script), "--store", url, "--grant", "sheets.write", "--seed", str(seed),
        "--until-idle", "--isolation", "in-process",
    )  # fmt: skip
    assert deployed.code == 0, deployed.err
    store = SqlStore(url)
    for n in range(EVENTS):
        store.publish(
            "copy", Publication(topic="item.added", message_id=f"item-{n:03d}", title=f"item {n}")
        )
    store.close()

    worker = subprocess.Popen(
        [sys.executable, "-m", "keep_sdk", "worker", "--store", url, "--isolation", "in-process"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 120
        while len(_rows(doubles)) < 6 and worker.poll() is None:
            assert time.monotonic() < deadline, "the worker wrote no rows in 2 minutes"
            time.sleep(0.05)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
    written = _rows(doubles)
    assert 6 <= len(written) < EVENTS, "the worker did not stop mid-workload"
    assert max(Counter(written).values()) == 1

    wal = Path(f"{db}-wal")
    assert wal.stat().st_size > 0
    wal.unlink()
    Path(f"{db}-shm").unlink(missing_ok=True)
    conn = sqlite3.connect(db)
    kept = conn.execute("SELECT count(*) FROM keep_ledger").fetchone()[0]
    conn.close()
    assert kept < len(written), "the WAL held no committed intent; nothing was lost"

    _refused_in_one_line(_keep_process("worker", "--store", url, "--until-idle"), db)
    _refused_in_one_line(_keep_process("status", "--store", url), db)
    _refused_in_one_line(_keep_process("run", str(script), "--store", url, "--until-idle"), db)
    assert _rows(doubles) == written

    accepted = _keep_process("accept-rollback", "--store", url)
    assert accepted.returncode == 0, accepted.stderr
    assert "forgotten" in accepted.stdout
    resumed = _keep_process("worker", "--store", url, "--until-idle", "--isolation", "in-process")
    assert resumed.returncode == 0, resumed.stderr
    after = Counter(_rows(doubles))
    assert set(after) == {f"item-{n:03d}" for n in range(EVENTS)}
    assert all(count == 1 for item, count in after.items() if item not in written)


def test_accept_rollback_on_a_store_that_lost_nothing_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    SqlStore(url).close()
    done = keep("accept-rollback", "--store", url)
    assert done.code == 0, done.err
    assert "nothing to accept" in done.out
    as_json = keep("accept-rollback", "--store", url, "--json")
    assert json.loads(as_json.out) == {
        "store": url,
        "database": str(tmp_path / "keep.db"),
        "markBefore": 0,
        "markAfter": 0,
        "forgotten": 0,
    }


@pytest.mark.parametrize(
    ("store", "needle"),
    [("postgresql://keep@127.0.0.1:1/keep", "not a SQLite store"), ("missing", "no keep store")],
)
def test_accept_rollback_refuses_what_it_cannot_accept(
    tmp_path: Path, store: str, needle: str
) -> None:
    url = f"sqlite:///{tmp_path / 'keep.db'}" if store == "missing" else store
    done = keep("accept-rollback", "--store", url)
    assert done.code == 2
    assert needle in done.err
    assert not (tmp_path / "keep.db").exists()
