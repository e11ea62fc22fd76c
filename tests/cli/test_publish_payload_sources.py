"""``keep publish --payload @FILE`` and ``--payload -`` (stdin) carry a payload larger than
one command-line argument may be (issue 31: 128 KB), up to the event limit of 1 MiB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from keep_sdk.cli import cli
from keep_sdk.stores import open_store
from tests.cli.terminal import BATCHES, keep

BIG = {"id": "big", "closedAt": "2026-11-26T10:00:00Z", "notes": "é" * 200_000}
"""400,000 bytes of UTF-8 in one string: three times what one argument of a command may hold."""


@pytest.fixture
def store(tmp_path: Path) -> str:
    script = tmp_path / "batches.js"
    script.write_text(BATCHES)
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    done = keep("deploy", str(script), "--store", url)
    assert done.code == 0, done.err
    return url


def _payload(store: str, message_id: str) -> object:
    opened = open_store(store)
    try:
        [event] = [e for e in opened.list_events("batches") if e.message_id == message_id]
        return event.payload
    finally:
        opened.close()


def _publish(
    store: str, message_id: str, payload: str, stdin: bytes | None = None
) -> tuple[int, str]:
    args = ["publish", "ticket.closed", "--message-id", message_id, "--title", "T"]
    done = CliRunner().invoke(cli, [*args, "--payload", payload, "--store", store], input=stdin)
    return done.exit_code, done.stderr


def test_a_payload_from_a_file_arrives_whole(store: str, tmp_path: Path) -> None:
    source = tmp_path / "payload.json"
    source.write_text(json.dumps(BIG, ensure_ascii=False), encoding="utf-8")
    code, err = _publish(store, "from-file", f"@{source}")
    assert code == 0, err
    assert _payload(store, "from-file") == BIG


def test_a_payload_from_stdin_arrives_whole(store: str) -> None:
    code, err = _publish(store, "from-stdin", "-", json.dumps(BIG).encode())
    assert code == 0, err
    assert _payload(store, "from-stdin") == BIG


@pytest.mark.parametrize(
    ("payload", "stdin", "message"),
    [
        ("@missing.json", None, "cannot read "),
        ("-", b"\xff\xfe{", "stdin is not UTF-8 text"),
        ("-", b"{not json", "--payload: not valid JSON"),
    ],
)
def test_an_unreadable_payload_is_one_line_and_exit_2(
    store: str, tmp_path: Path, payload: str, stdin: bytes | None, message: str
) -> None:
    if payload.startswith("@"):
        payload = f"@{tmp_path / payload[1:]}"
    code, err = _publish(store, "bad", payload, stdin)
    assert code == 2, err
    assert message in err
    assert "Traceback" not in err
