"""The mail connector against a real Maildir and a real SMTP server (aiosmtpd) on 127.0.0.1."""

from __future__ import annotations

import email
import email.policy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keep_sdk.connectors.mail import MailConnector, MailSettings, build, message_id_for
from keep_sdk.errors import (
    ConfigurationError,
    InvalidArguments,
    PreconditionFailed,
    TransientError,
    UncertainOutcome,
)
from keep_sdk.model import OperationKind, ReconcileStatus
from tests.connectors.mail.smtp_server import SmtpServer, self_signed, smtp_server
from tests.connectors.mcp.servers import free_port

SEND = {"to": ["carol@example.com"], "subject": "Report", "body": "All good."}


def _settings(server: SmtpServer | None, **options: Any) -> MailSettings:
    values: dict[str, Any] = {
        "from_address": "keep@example.org",
        "smtp_host": "127.0.0.1",
        "smtp_port": server.port if server else free_port(),
        "security": "none",
        "timeout_s": 10.0,
    }
    values.update(options)
    return MailSettings(**values)


def _connector(server: SmtpServer | None, **options: Any) -> MailConnector:
    return build("mail", _settings(server, **options))


def _received(server: SmtpServer) -> list[email.message.EmailMessage]:
    return [
        email.message_from_bytes(m.as_bytes(), policy=email.policy.default)  # type: ignore[misc]
        for m in server.messages()
    ]


def test_operations_kinds_and_permissions(inbox: Path, sent: Path) -> None:
    connector = build(
        "mail",
        MailSettings(
            maildir=str(inbox), sent_maildir=str(inbox), from_address="a@b.c", smtp_host="x"
        ),
    )
    ops = {op.name: op for op in connector.manifest().operations}
    assert {n: (o.kind, o.permission) for n, o in ops.items()} == {
        "getById": (OperationKind.READ_BY_ID, "mail.read"),
        "search": (OperationKind.READ, "mail.read"),
        "send": (OperationKind.MUTATION, "mail.send"),
    }
    assert ops["send"].reconcilable
    send_only = build("outbox", MailSettings(from_address="a@b.c", smtp_host="x"))
    assert [op.name for op in send_only.manifest().operations] == ["send"]
    assert not send_only.operation("send").reconcilable
    assert send_only.operation("send").permission == "outbox.send"


def test_search_and_get_by_id_read_the_maildir(inbox: Path) -> None:
    connector = _connector(None, maildir=str(inbox))
    everything = connector.invoke("search", {})
    assert isinstance(everything, list)
    assert [m["subject"] for m in everything] == ["Invoice 1", "Lunch", "Invoice 2"]  # type: ignore[index,call-overload]
    invoices = connector.invoke("search", {"query": "from:alice invoice"})
    assert [m["subject"] for m in invoices] == ["Invoice 1", "Invoice 2"]  # type: ignore[index,union-attr]
    later = connector.invoke("search", {"after": "2026-11-21T00:00:00Z", "limit": 1})
    assert [m["subject"] for m in later] == ["Lunch"]  # type: ignore[index,union-attr]
    first = everything[0]  # type: ignore[index]
    assert first["date"] == "2026-11-20T09:00:00Z"
    assert first["body"].strip() == "Please pay"
    assert connector.invoke("getById", {"id": first["id"]}) == first
    assert connector.invoke("getById", {"id": "no-such-key"}) is None
    with pytest.raises(InvalidArguments, match="`id`"):
        connector.invoke("getById", {"id": "../../etc/passwd"})


def test_send_delivers_one_message_with_the_keys_message_id(server: SmtpServer) -> None:
    connector = _connector(server)
    result = connector.invoke("send", {**SEND, "cc": ["dan@example.com"]}, idempotency_key="keep-1")
    message_id = message_id_for("keep-1", "example.org")
    assert result == {"messageId": message_id, "to": ["carol@example.com"]}
    [received] = _received(server)
    assert received["Message-ID"] == message_id
    assert received["From"] == "keep@example.org"
    assert received["Subject"] == "Report"
    assert received.get_content().strip() == "All good."
    [envelope] = server.recorder.received
    assert envelope.rcpt_tos == ["carol@example.com", "dan@example.com"]


@given(st.text(min_size=1, max_size=60), st.text(min_size=1, max_size=60))
def test_message_ids_are_deterministic_per_key_and_distinct_across_keys(a: str, b: str) -> None:
    assert message_id_for(a, "example.org") == message_id_for(a, "example.org")
    parsed = email.message_from_string(
        f"Message-ID: {message_id_for(a, 'example.org')}\n\n", policy=email.policy.default
    )
    assert parsed["Message-ID"] == message_id_for(a, "example.org")
    if a != b:
        assert message_id_for(a, "example.org") != message_id_for(b, "example.org")


def test_a_drop_after_acceptance_is_uncertain_and_reconciles_to_applied(
    server: SmtpServer, sent: Path
) -> None:
    connector = _connector(server, sent_maildir=str(sent))
    server.recorder.drop_after_accept = 1
    with pytest.raises(UncertainOutcome, match="may have been accepted"):
        connector.invoke("send", SEND, idempotency_key="keep-1")
    outcome = connector.reconcile("send", SEND, "keep-1")
    assert outcome.status is ReconcileStatus.APPLIED
    assert outcome.result == {
        "messageId": message_id_for("keep-1", "example.org"),
        "to": ["carol@example.com"],
    }
    assert connector.reconcile("send", SEND, "keep-2").status is ReconcileStatus.FAILED
    assert len(server.messages()) == 1


def test_a_refused_connection_is_one_clear_message() -> None:
    connector = _connector(None)
    with pytest.raises(TransientError) as caught:
        connector.invoke("send", SEND, idempotency_key="keep-1")
    message = str(caught.value)
    assert message.startswith("ctx.mail.send: cannot connect to the SMTP server 127.0.0.1:")
    assert "nothing was sent" in message


def test_login_and_a_wrong_password(sent: Path) -> None:
    with smtp_server(sent, login=("keep", "right-pass")) as running:
        good = _connector(running, username="keep", password="right-pass")
        good.invoke("send", SEND, idempotency_key="keep-1")
        bad = _connector(running, username="keep", password="wrong-pass-123")
        with pytest.raises(PreconditionFailed) as caught:
            bad.invoke("send", SEND, idempotency_key="keep-2")
        assert len(running.messages()) == 1
    message = str(caught.value)
    assert "rejected the login of 'keep' (535); check `username` and `password`" in message
    assert "wrong-pass" not in message
    assert "wrong-pass" not in repr(bad.settings)


def test_starttls_with_the_servers_ca_and_without_it(tmp_path: Path, sent: Path) -> None:
    context, ca = self_signed(tmp_path)
    with smtp_server(sent, login=("keep", "pw"), tls=context) as running:
        trusted = _connector(
            running, security="starttls", ca_file=str(ca), username="keep", password="pw"
        )
        trusted.invoke("send", SEND, idempotency_key="keep-1")
        untrusted = _connector(running, security="starttls", username="keep", password="pw")
        with pytest.raises(PreconditionFailed, match=r"TLS with the SMTP server .* failed"):
            untrusted.invoke("send", SEND, idempotency_key="keep-2")
        plain = _connector(running, username="keep", password="pw")
        with pytest.raises((PreconditionFailed, TransientError)):
            plain.invoke("send", SEND, idempotency_key="keep-3")
        assert len(running.messages()) == 1


def test_a_refused_recipient_sends_nothing(server: SmtpServer) -> None:
    server.recorder.refuse["nobody@example.com"] = "550 5.1.1 No such user"
    connector = _connector(server)
    with pytest.raises(PreconditionFailed, match=r"nobody@example.com \(550 5.1.1 No such user"):
        connector.invoke(
            "send",
            {**SEND, "to": ["carol@example.com", "nobody@example.com"]},
            idempotency_key="keep-1",
        )
    server.recorder.refuse["busy@example.com"] = "451 4.3.0 Try later"
    with pytest.raises(TransientError, match="temporary; nothing was sent"):
        connector.invoke("send", {**SEND, "to": ["busy@example.com"]}, idempotency_key="keep-2")
    assert server.messages() == []


def test_header_injection_is_refused_before_sending(server: SmtpServer) -> None:
    connector = _connector(server)
    with pytest.raises(InvalidArguments, match="`subject`"):
        connector.invoke(
            "send", {**SEND, "subject": "Hi\r\nBcc: x@evil.test"}, idempotency_key="keep-1"
        )
    with pytest.raises(InvalidArguments, match=r"`to\[0\]`"):
        connector.invoke("send", {**SEND, "to": ["a@b.c, x@evil.test"]}, idempotency_key="k")
    assert server.messages() == []


def test_a_missing_maildir_is_one_clear_message(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"`maildir` .* is not a Maildir"):
        build("mail", _settings(None, maildir=str(tmp_path / "nope")))
    with pytest.raises(ValueError, match="give both `username` and `password`"):
        _settings(None, username="keep")
