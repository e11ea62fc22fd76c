"""Sending one message over SMTP, each failure classified by how far the exchange got."""

from __future__ import annotations

import smtplib
import socket
import ssl
from email.message import EmailMessage

from keep_sdk.connectors.mail.settings import MailSettings
from keep_sdk.errors import PreconditionFailed, TransientError, UncertainOutcome

__all__ = ["transmit"]


def transmit(
    settings: MailSettings, message: EmailMessage, recipients: list[str], what: str
) -> None:
    """Send `message` to `recipients`; return once the server accepted it.

    Before DATA nothing can have been delivered: a refused or lost connection, a
    4xx reply or a timeout is a `TransientError`; a wrong password, a refused
    sender or recipient or a missing STARTTLS is a `PreconditionFailed`. Once DATA
    is under way, a dropped connection or a timeout is an `UncertainOutcome`.
    """
    where = settings.where()
    try:
        smtp = _connect(settings)
    except (OSError, smtplib.SMTPException) as exc:
        raise TransientError(
            f"{what}: cannot connect to the SMTP server {where}: {_reason(exc)}; nothing was sent"
        ) from None
    try:
        _prepare(smtp, settings, message, recipients, what)
        try:
            code, reply = smtp.data(message.as_bytes())
        except smtplib.SMTPDataError as exc:
            raise _refused(exc.smtp_code, exc.smtp_error, what, "refused the message") from None
        except (OSError, smtplib.SMTPServerDisconnected) as exc:
            raise UncertainOutcome(
                f"{what}: the connection to {where} was lost while sending the message "
                f"({_reason(exc)}); it may have been accepted"
            ) from None
        if code != 250:  # pragma: no cover - smtplib raises SMTPDataError for these
            raise _refused(code, reply, what, "refused the message")
    finally:
        try:
            smtp.quit()
        except (OSError, smtplib.SMTPException):
            smtp.close()


def _connect(settings: MailSettings) -> smtplib.SMTP:
    context = ssl.create_default_context(cafile=settings.ca_file)
    if settings.security == "tls":
        return smtplib.SMTP_SSL(
            settings.smtp_host, settings.smtp_port, timeout=settings.timeout_s, context=context
        )
    return smtplib.SMTP(settings.smtp_host, settings.smtp_port, timeout=settings.timeout_s)


def _prepare(
    smtp: smtplib.SMTP,
    settings: MailSettings,
    message: EmailMessage,
    recipients: list[str],
    what: str,
) -> None:
    """EHLO, STARTTLS, AUTH, MAIL FROM and RCPT TO: nothing is delivered yet."""
    where = settings.where()
    try:
        smtp.ehlo()
        if settings.security == "starttls":
            if not smtp.has_extn("starttls"):
                raise PreconditionFailed(
                    f"{what}: the SMTP server {where} does not offer STARTTLS; use "
                    '`security = "tls"` for a TLS port, or `"none"` for a local relay'
                )
            smtp.starttls(context=ssl.create_default_context(cafile=settings.ca_file))
            smtp.ehlo()
        if settings.username is not None and settings.password is not None:
            try:
                smtp.login(settings.username, settings.password.get_secret_value())
            except smtplib.SMTPAuthenticationError as exc:
                raise PreconditionFailed(
                    f"{what}: the SMTP server {where} rejected the login of "
                    f"{settings.username!r} ({exc.smtp_code}); check `username` and `password`"
                ) from None
            except smtplib.SMTPNotSupportedError:
                raise PreconditionFailed(
                    f"{what}: the SMTP server {where} does not accept a login here; it may "
                    'require `security = "starttls"` or `"tls"`'
                ) from None
        code, reply = smtp.mail(settings.from_address)
        if code != 250:
            smtp.rset()
            raise _refused(code, reply, what, f"refused the sender {settings.from_address}")
        refused: list[str] = []
        for recipient in recipients:
            code, reply = smtp.rcpt(recipient)
            if code not in (250, 251):
                refused.append(f"{recipient} ({code} {_text(reply)})")
                last = (code, reply)
        if refused:
            smtp.rset()
            code, reply = last
            raise _refused(code, reply, what, "refused the recipients " + ", ".join(refused))
    except ssl.SSLError as exc:
        raise PreconditionFailed(
            f"{what}: TLS with the SMTP server {where} failed ({exc.reason or exc}); "
            "check `ca_file` and `security`"
        ) from None
    except (OSError, smtplib.SMTPServerDisconnected) as exc:
        raise TransientError(
            f"{what}: the connection to {where} was lost before the message was sent "
            f"({_reason(exc)}); nothing was sent"
        ) from None
    except smtplib.SMTPResponseException as exc:
        raise _refused(exc.smtp_code, exc.smtp_error, what, "refused the session") from None


def _refused(code: int, reply: bytes | str, what: str, verb: str) -> Exception:
    text = f"{what}: the SMTP server {verb}: {code} {_text(reply)}"
    if 400 <= code < 500:
        return TransientError(text + " (temporary; nothing was sent)")
    return PreconditionFailed(text)


def _text(reply: bytes | str) -> str:
    if isinstance(reply, bytes):
        return reply.decode("utf-8", "replace").strip()
    return reply.strip()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout | TimeoutError):
        return "timed out"
    return str(exc).strip() or type(exc).__name__
