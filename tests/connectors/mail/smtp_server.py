"""A real SMTP server for the tests (aiosmtpd on 127.0.0.1) that files what it accepts."""

from __future__ import annotations

import datetime as dt
import mailbox
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword, Session

from tests.connectors.mcp.servers import free_port


@dataclass
class Recorder:
    """Files each accepted message in the `sent` Maildir, like a provider's Sent folder.

    `drop_after_accept` closes the connection right after filing, before the
    reply; `refuse` maps recipients to the RCPT reply that refuses them.
    """

    sent: Path
    drop_after_accept: int = 0
    refuse: dict[str, str] = field(default_factory=dict)
    received: list[Envelope] = field(default_factory=list)

    def __post_init__(self) -> None:
        mailbox.Maildir(self.sent, create=True)

    async def handle_RCPT(
        self, server: Any, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        if address in self.refuse:
            return self.refuse[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or b""
        mailbox.Maildir(self.sent, create=False).add(content)
        self.received.append(envelope)
        if self.drop_after_accept:
            self.drop_after_accept -= 1
            server.transport.abort()
        return "250 Message accepted"


@dataclass
class SmtpServer:
    host: str
    port: int
    recorder: Recorder

    def messages(self) -> list[mailbox.MaildirMessage]:
        return list(mailbox.Maildir(self.recorder.sent, create=False))


def _authenticator(login: str, password: str) -> Any:
    def check(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        ok = (
            isinstance(data, LoginPassword)
            and data.login.decode() == login
            and data.password.decode() == password
        )
        return AuthResult(success=ok, handled=False)

    return check


@contextmanager
def smtp_server(
    sent: Path,
    *,
    login: tuple[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
) -> Iterator[SmtpServer]:
    """An aiosmtpd server on 127.0.0.1; with `tls`, STARTTLS is offered and required."""
    recorder = Recorder(sent)
    port = free_port()
    options: dict[str, Any] = {}
    if login is not None:
        options.update(authenticator=_authenticator(*login), auth_require_tls=tls is not None)
    if tls is not None:
        options.update(tls_context=tls, require_starttls=True)
    controller = Controller(recorder, hostname="127.0.0.1", port=port, **options)
    controller.start()
    try:
        yield SmtpServer("127.0.0.1", port, recorder)
    finally:
        controller.stop()


def self_signed(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server TLS context for 127.0.0.1 and the PEM file a client trusts it with."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file = directory / "cert.pem"
    key_file = directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context, cert_file
