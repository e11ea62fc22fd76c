"""`MailConnector` and `build`: read a Maildir, send over SMTP, reconcile by Message-ID."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.mail._messages import (
    find_by_message_id,
    message_id_for,
    message_json,
    open_maildir,
    outgoing,
    parse,
)
from keep_sdk.connectors.mail._smtp import transmit
from keep_sdk.connectors.mail.settings import MailSettings
from keep_sdk.connectors.operation import Operation
from keep_sdk.errors import ConfigurationError, TransientError
from keep_sdk.model import OperationKind, ReconcileOutcome, ReconcileStatus

__all__ = ["MailConnector", "MailSearch", "MailSend", "MessageRef", "build"]

_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")
_ADDRESS = r"^[^@\s<>,]+@[^@\s<>,]+$"


class _Args(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class MailSearch(_Args):
    """Arguments of ``search``."""

    query: str | None = Field(
        default=None,
        description="Case-insensitive words matched against from, to, subject and body; "
        "'from:alice' restricts to a sender.",
    )
    after: str | None = Field(
        default=None, description="Only messages dated strictly after this ISO 8601 time."
    )
    limit: Annotated[int, Field(ge=1, le=500)] = 50


class MessageRef(_Args):
    """Arguments of ``getById``."""

    id: Annotated[str, Field(min_length=1, pattern=r"^[^/\\]+$")]


class MailSend(_Args):
    """Arguments of ``send``."""

    to: Annotated[list[Annotated[str, Field(pattern=_ADDRESS)]], Field(min_length=1, max_length=50)]
    cc: list[Annotated[str, Field(pattern=_ADDRESS)]] = Field(default_factory=list, max_length=50)
    subject: Annotated[str, Field(max_length=998, pattern=r"^[^\r\n]*$")]
    body: Annotated[str, Field(max_length=1_000_000)]
    in_reply_to: str | None = Field(
        default=None, pattern=r"^<[^<>\s]+>$", description="Message-ID of the message answered."
    )


class MailConnector(Connector):
    """Base of the classes `build` makes: one mailbox, its SMTP server, its Sent folder."""

    settings: ClassVar[MailSettings]

    def search(self, args: MailSearch) -> JsonValue:
        """Messages matching the query, oldest first."""
        maildir = self._inbox()
        found: list[dict[str, JsonValue]] = []
        for key in maildir.iterkeys():
            try:
                message = message_json(key, parse(maildir.get_bytes(key)))
            except KeyError:
                continue
            if _matches(message, args.query) and _after(message, args.after):
                found.append(message)
        found.sort(key=lambda m: (str(m["date"] or ""), str(m["id"])))
        return list(found[: args.limit])

    def get_by_id(self, args: MessageRef) -> JsonValue:
        """One message by id, or null when there is none."""
        maildir = self._inbox()
        try:
            raw = maildir.get_bytes(args.id)
        except KeyError:
            return None
        return message_json(args.id, parse(raw))

    def send(self, args: MailSend, *, idempotency_key: str) -> JsonValue:
        """Send a message with a Message-ID derived from the key; returns {messageId, to}."""
        settings = self.settings
        message_id = message_id_for(idempotency_key, settings.domain())
        message = outgoing(
            sender=settings.from_address,
            to=args.to,
            cc=args.cc,
            subject=args.subject,
            body=args.body,
            message_id=message_id,
            in_reply_to=args.in_reply_to,
        )
        transmit(settings, message, [*args.to, *args.cc], f"ctx.{self.name}.send")
        return {"messageId": message_id, "to": list(args.to)}

    def reconcile_send(self, args: MailSend, idempotency_key: str) -> ReconcileOutcome:
        """Applied when the Sent Maildir holds the key's Message-ID, else failed."""
        assert self.settings.sent_maildir is not None
        message_id = message_id_for(idempotency_key, self.settings.domain())
        found = find_by_message_id(open_maildir(self.settings.sent_maildir), message_id)
        if found is None:
            return ReconcileOutcome(
                status=ReconcileStatus.FAILED,
                detail=f"no message {message_id} in the Sent Maildir",
            )
        return ReconcileOutcome(
            status=ReconcileStatus.APPLIED, result={"messageId": message_id, "to": list(args.to)}
        )

    def _inbox(self) -> Any:
        assert self.settings.maildir is not None
        try:
            return open_maildir(self.settings.maildir)
        except OSError as exc:
            raise TransientError(f"ctx.{self.name}: cannot open the Maildir: {exc}") from None


def _matches(message: dict[str, JsonValue], query: str | None) -> bool:
    if not query:
        return True
    for term in query.lower().split():
        if term.startswith("from:"):
            if term[5:] not in str(message["from"]).lower():
                return False
            continue
        haystack = " ".join(str(message[k] or "") for k in ("from", "to", "subject", "body"))
        if term not in haystack.lower():
            return False
    return True


def _after(message: dict[str, JsonValue], after: str | None) -> bool:
    if after is None:
        return True
    if message["date"] is None:
        return False
    try:
        return dt.datetime.fromisoformat(str(message["date"])) > dt.datetime.fromisoformat(after)
    except (TypeError, ValueError):
        return str(message["date"]) > after


def connector_class(name: str, settings: MailSettings) -> type[MailConnector]:
    """The connector class of the mailbox `settings` describes, with `name` permissions."""
    namespace: dict[str, Any] = {
        "name": name,
        "settings": settings,
        "description": settings.description or f"Mail of {settings.from_address}",
        "__module__": __name__,
    }
    if settings.maildir is not None:
        namespace["_op_search"] = Operation(
            MailConnector.search,
            kind=OperationKind.READ,
            permission=f"{name}.read",
            args=MailSearch,
            name="search",
            description="Messages in the mailbox matching `query`, oldest first; each has id, "
            "messageId, from, to, cc, subject, date, inReplyTo and body (text).",
        )
        namespace["_op_get_by_id"] = Operation(
            MailConnector.get_by_id,
            kind=OperationKind.READ_BY_ID,
            permission=f"{name}.read",
            args=MessageRef,
            name="getById",
            description="One message by id (from search), or null.",
        )
    send = Operation(
        MailConnector.send,
        kind=OperationKind.MUTATION,
        permission=f"{name}.send",
        args=MailSend,
        name="send",
        description="Send a plain-text message; returns {messageId, to}.",
    )
    if settings.sent_maildir is not None:
        send.reconcile_func = MailConnector.reconcile_send
    namespace["_op_send"] = send
    return type(f"MailConnector_{name}", (MailConnector,), namespace)


def build(name: str, settings: MailSettings) -> MailConnector:
    """The mail connector `name`; `ConfigurationError` for a missing Maildir."""
    if not _NAME.match(name):
        raise ConfigurationError(
            f"connector name {name!r} is not usable in scripts; use a JS identifier starting "
            "with a lowercase letter, such as 'mail'"
        )
    for key in ("maildir", "sent_maildir"):
        path = getattr(settings, key)
        if path is not None and not all((Path(path) / sub).is_dir() for sub in ("cur", "new")):
            raise ConfigurationError(
                f"connector {name!r}: `{key}` {path!r} is not a Maildir (a folder with "
                "cur/, new/ and tmp/); create it or fix the path"
            )
    return connector_class(name, settings)()
