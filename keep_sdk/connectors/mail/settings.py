"""`MailSettings`: a Maildir to read, an SMTP server to send through, a Sent Maildir."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from keep_sdk.connectors._settings import resolve_path

__all__ = ["MailSettings"]


class MailSettings(BaseModel):
    """Where mail is read from and sent through. `password` is a secret: never shown."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["mail"] = "mail"
    maildir: str | None = Field(
        default=None,
        description="Maildir read by `search` and `getById` (relative to keep.toml's "
        "folder); without it, send only.",
    )
    sent_maildir: str | None = Field(
        default=None,
        description="Maildir where the mail system files what it accepted (a synced Sent "
        "folder); `send` is reconciled by Message-ID there. Without it an uncertain send "
        "goes to a person.",
    )
    from_address: str = Field(pattern=r"^[^@\s<>]+@[^@\s<>]+$", description="The From address.")
    smtp_host: str = Field(min_length=1)
    smtp_port: Annotated[int, Field(ge=1, le=65535)] = 587
    security: Literal["starttls", "tls", "none"] = Field(
        default="starttls",
        description="`starttls` (upgrade a plain connection, port 587), `tls` (TLS from the "
        "start, port 465) or `none` (a local relay only).",
    )
    ca_file: str | None = Field(
        default=None,
        description="PEM file of the CA that signed the server's certificate (relative to "
        "keep.toml's folder).",
    )
    username: str | None = None
    password: SecretStr | None = None
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 30.0
    message_id_domain: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9.-]+$",
        description="Right-hand side of generated Message-IDs; default: the From domain.",
    )
    description: str = ""

    @model_validator(mode="after")
    def _login_pair(self) -> MailSettings:
        if (self.username is None) != (self.password is None):
            raise ValueError("give both `username` and `password` to log in, or neither")
        return self

    def resolved_against(self, folder: Path) -> MailSettings:
        """These settings as keep.toml in `folder` means them: `maildir`, `sent_maildir` and
        `ca_file` resolved against `folder`."""
        update = {
            key: resolve_path(value, folder)
            for key in ("maildir", "sent_maildir", "ca_file")
            if (value := getattr(self, key)) is not None
        }
        return self.model_copy(update=update) if update else self

    def domain(self) -> str:
        """The domain of generated Message-IDs."""
        return self.message_id_domain or self.from_address.rsplit("@", 1)[1]

    def where(self) -> str:
        """The SMTP server as messages name it."""
        return f"{self.smtp_host}:{self.smtp_port}"
