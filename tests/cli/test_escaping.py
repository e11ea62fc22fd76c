"""Issue 17, defect 1: outside text is shown as it is, never read as terminal markup."""

from __future__ import annotations

import json
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keep_sdk.app import Installation
from keep_sdk.stores import Publication
from tests.cli.terminal import ALL_GRANTS, DEMO, keep, run_demo

MARKUP = [
    "[",
    "]",
    "[/bold]",
    "[bold]",
    "[/]",
    "[todo]",
    "[link=https://evil.example/x]",
    "[/link]",
    "[red on white]",
    "\\[",
    ":smile:",
    "[b]x[/i]",
    "closing",
    " ",
    "é",
]
"""Fragments that rich would read as markup, escapes or emoji codes, and plain words."""

titles = (
    st.lists(
        st.one_of(
            st.sampled_from(MARKUP),
            st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=6),
        ),
        min_size=1,
        max_size=8,
    )
    .map("".join)
    .filter(lambda t: t.strip() == t and t != "")
)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> str:
    store = f"sqlite:///{tmp_path_factory.mktemp('escaping') / 'keep.db'}"
    inst = Installation.open(store, isolation="in-process")
    try:
        inst.runtime.deploy(DEMO.read_text(), name="invoices")
    finally:
        inst.close()
    return store


_ids = count()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(title=titles)
def test_event_titles_are_shown_literally_by_events_and_status(deployed: str, title: str) -> None:
    inst = Installation.open(deployed, isolation="in-process")
    try:
        inst.store.publish(
            "invoices",
            Publication(
                topic="invoice.received",
                message_id=f"m{next(_ids)}",
                title=title,
                payload={"from": "a@b", "subject": "s", "amount": "1 EUR", "receivedAt": "x"},
            ),
        )
    finally:
        inst.close()
    for command in (("events", "--limit", "1"), ("status", "--limit", "1")):
        done = keep(*command, "--store", deployed)
        assert done.code == 0, done.err
        assert title in done.out.splitlines()[1 if command[0] == "events" else 2]
        assert "Traceback" not in done.err


SENDERS = ["[/bold]x@y.example", "[link=https://evil.example]a@b.example", "[todo]c@d.example"]
SUBJECTS = ["[/bold] closing invoice", "[todo] File taxes invoice", "invoice [red]due[/red]"]


def test_keep_run_status_runs_and_ledger_show_script_titles_literally(tmp_path: Path) -> None:
    seed = tmp_path / "seed.json"
    seed.write_text(
        json.dumps(
            {
                "gmail": {
                    "messages": [
                        {
                            "id": f"m{i}",
                            "from": sender,
                            "to": "me@example.com",
                            "subject": subject,
                            "body": f"Pay {i + 1}0.00 EUR",
                            "receivedAt": f"2026-11-2{i}T08:00:00Z",
                        }
                        for i, (sender, subject) in enumerate(zip(SENDERS, SUBJECTS, strict=True))
                    ]
                },
                "sheets": {"spreadsheets": {"invoices": {"rows": []}}},
                "slack": {"channels": {"#finance": []}},
            }
        )
    )
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    done = keep(
        "run", str(DEMO), "--store", store, "--seed", str(seed), "--until-idle",
        "--isolation", "in-process", *ALL_GRANTS,
    )  # fmt: skip
    assert done.code == 0, done.err
    for i, sender in enumerate(SENDERS):
        assert f"Add invoice from {sender} ({i + 1}0.00 EUR) to the sheet: done" in done.out
    for command in ("status", "events", "runs", "ledger"):
        shown = keep(command, "--store", store)
        assert shown.code == 0, shown.err
        assert "Traceback" not in shown.err
    status = keep("status", "--store", store).out
    events = keep("events", "--store", store).out
    ledger = keep("ledger", "--store", store).out
    for sender, subject in zip(SENDERS, SUBJECTS, strict=True):
        assert f'Email from {sender}: "{subject}"' in events
        assert f"Add invoice from {sender}" in ledger
        assert f"Add invoice from {sender}" in status


def test_nothing_becomes_a_terminal_hyperlink(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    assert run_demo(store, *ALL_GRANTS).code == 0
    inst = Installation.open(store, isolation="in-process")
    try:
        inst.store.publish(
            "invoices",
            Publication(
                topic="invoice.received",
                message_id="evil",
                title="[link=https://evil.example]Pay here[/link]",
                payload={"from": "a@b", "subject": "s", "amount": "1 EUR", "receivedAt": "x"},
            ),
        )
    finally:
        inst.close()
    from click.testing import CliRunner

    from keep_sdk.cli import cli

    result = CliRunner(env={"COLUMNS": "80", "FORCE_COLOR": "1", "TERM": "xterm-256color"}).invoke(
        cli, ["events", "--store", store]
    )
    assert result.exit_code == 0, result.stderr
    assert "\x1b]8;" not in result.stdout
    assert "[link=https://evil.example]Pay here[/link]" in result.stdout


def test_control_characters_and_bidi_overrides_in_titles_reach_no_terminal(
    deployed: str,
) -> None:
    """Issue 31: an email subject with an escape sequence and a right-to-left override."""
    title = "Invoice \x1b[2J\x1b[31mPAID\x07 \u202egnp.exe\u2066x\u2069 \x9b1m"
    inst = Installation.open(deployed, isolation="in-process")
    try:
        inst.store.publish(
            "invoices",
            Publication(
                topic="invoice.received",
                message_id="ctl-1",
                title=title,
                payload={"from": "a@b", "subject": "s", "amount": "1 EUR", "receivedAt": "x"},
            ),
        )
    finally:
        inst.close()
    for command in (("events", "--limit", "1"), ("status", "--limit", "1")):
        done = keep(*command, "--store", deployed)
        assert done.code == 0, done.err
        for raw in ("\x1b", "\x07", "\u202e", "\u2066", "\u2069", "\x9b"):
            assert raw not in done.out, (command, raw)
        assert "Invoice \\x1b[2J\\x1b[31mPAID\\x07 \\u202egnp.exe" in done.out, command
