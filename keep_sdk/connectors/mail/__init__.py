"""The mail connector: read a Maildir, send over SMTP, reconcile sends in a Sent Maildir."""

from keep_sdk.connectors.mail._messages import message_id_for
from keep_sdk.connectors.mail.connector import (
    MailConnector,
    MailSearch,
    MailSend,
    MessageRef,
    build,
)
from keep_sdk.connectors.mail.settings import MailSettings

__all__ = [
    "MailConnector",
    "MailSearch",
    "MailSend",
    "MailSettings",
    "MessageRef",
    "build",
    "message_id_for",
]
