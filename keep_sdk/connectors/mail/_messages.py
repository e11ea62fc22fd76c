"""Reading a Maildir and building outgoing messages, as plain JSON for scripts."""

from __future__ import annotations

import email.policy
import email.utils
import hashlib
import mailbox
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from pydantic import JsonValue

__all__ = ["message_id_for", "message_json", "open_maildir", "outgoing"]


def open_maildir(path: str) -> mailbox.Maildir:
    """The Maildir at `path` (it must exist: nothing is created)."""
    return mailbox.Maildir(Path(path), factory=None, create=False)


def parse(raw: bytes) -> EmailMessage:
    message = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    return message


def message_json(key: str, message: EmailMessage) -> dict[str, JsonValue]:
    """One message as scripts see it: id (the Maildir key), headers, date and text body."""
    date = message.get("Date")
    received: str | None = None
    if date is not None:
        try:
            parsed = email.utils.parsedate_to_datetime(str(date))
            received = parsed.isoformat().replace("+00:00", "Z")
        except (TypeError, ValueError):
            received = None
    body = message.get_body(preferencelist=("plain",))
    text = body.get_content() if body is not None else ""
    return {
        "id": key,
        "messageId": str(message.get("Message-ID", "")) or None,
        "from": str(message.get("From", "")),
        "to": str(message.get("To", "")),
        "cc": str(message.get("Cc", "")) or None,
        "subject": str(message.get("Subject", "")),
        "date": received,
        "inReplyTo": str(message.get("In-Reply-To", "")) or None,
        "body": text,
    }


def message_id_for(key: str, domain: str) -> str:
    """The Message-ID of the send with idempotency `key`: the same key, the same id."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"<keep.{digest}@{domain}>"


def outgoing(
    *,
    sender: str,
    to: list[str],
    cc: list[str],
    subject: str,
    body: str,
    message_id: str,
    in_reply_to: str | None,
) -> EmailMessage:
    """The message `send` transmits."""
    message = EmailMessage(policy=email.policy.SMTP)
    message["From"] = sender
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    message["Subject"] = subject
    message["Date"] = email.utils.formatdate(usegmt=True)
    message["Message-ID"] = message_id
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
        message["References"] = in_reply_to
    message.set_content(body)
    return message


def find_by_message_id(maildir: mailbox.Maildir, message_id: str) -> tuple[str, Any] | None:
    """The key and message in `maildir` whose Message-ID is `message_id`, if any."""
    for key in maildir.iterkeys():
        try:
            raw = maildir.get_bytes(key)
        except KeyError:
            continue
        message = parse(raw)
        if str(message.get("Message-ID", "")).strip() == message_id:
            return key, message
    return None
