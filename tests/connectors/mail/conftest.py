from __future__ import annotations

import mailbox
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest

from tests.connectors.mail.smtp_server import SmtpServer, smtp_server


def deliver(inbox: Path, sender: str, subject: str, body: str, date: str) -> str:
    """Put one message in the Maildir `inbox`; return its key."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = "me@example.com"
    message["Subject"] = subject
    message["Date"] = date
    message["Message-ID"] = f"<{subject.replace(' ', '.')}@example.com>"
    message.set_content(body)
    return mailbox.Maildir(inbox, create=True).add(message)


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    path = tmp_path / "Inbox"
    deliver(
        path,
        "Alice <alice@example.com>",
        "Invoice 1",
        "Please pay",
        "Fri, 20 Nov 2026 09:00:00 +0000",
    )
    deliver(path, "Bob <bob@example.com>", "Lunch", "Noon?", "Sat, 21 Nov 2026 10:00:00 +0000")
    deliver(
        path,
        "Alice <alice@example.com>",
        "Invoice 2",
        "Paid, thanks",
        "Sun, 22 Nov 2026 11:00:00 +0000",
    )
    return path


@pytest.fixture
def sent(tmp_path: Path) -> Path:
    return tmp_path / "Sent"


@pytest.fixture
def server(sent: Path) -> Iterator[SmtpServer]:
    with smtp_server(sent) as running:
        yield running
