"""How a console is served: store, address, token, and who its actions are audited as.

A console binds to loopback unless a token was configured: anyone who can reach
a non-loopback address could otherwise read the store and act on it.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import secrets
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from keep_sdk.app import DEFAULT_ISOLATION
from keep_sdk.errors import ConfigurationError

__all__ = [
    "ConsoleSettings",
    "check_bind",
    "default_actor",
    "is_loopback",
    "new_token",
    "stored_token",
]

DEFAULT_PORT = 8787


def new_token() -> str:
    """A fresh random token (printed on start when none is configured)."""
    return secrets.token_urlsafe(24)


def stored_token(path: Path) -> str:
    """The token kept in `path`, created there (readable by its owner only) on first start."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    if len(token) >= 16:
        return token
    token = new_token()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return token


def default_actor() -> str:
    """``console:<login name>``: the name the console's actions are audited under."""
    try:
        return f"console:{getpass.getuser()}"
    except (KeyError, OSError):
        return "console"


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, *, token_configured: bool) -> None:
    """Refuse (`ConfigurationError`) to bind a non-loopback `host` without a configured token."""
    if not is_loopback(host) and not token_configured:
        raise ConfigurationError(
            f"refusing to serve on {host}, which other machines can reach, with a generated "
            "token; configure one (--token or KEEP_CONSOLE_TOKEN) or bind to 127.0.0.1"
        )


class ConsoleSettings(BaseModel):
    """What `keep_sdk.console.create_app` and `serve` need."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    store_url: str | None = Field(default=None, description="None: the default store.")
    host: str = "127.0.0.1"
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535)
    token: str = Field(default_factory=new_token, min_length=16, repr=False)
    actor: str = Field(default_factory=default_actor, min_length=1)
    page_size: int = Field(default=50, ge=1, le=500)
    isolation: str = DEFAULT_ISOLATION
    live_interval_s: float = Field(default=1.0, gt=0, description="How often SSE looks.")
    action_wait_s: float = Field(
        default=30.0, ge=0, description="How long an action waits for a worker's lease."
    )
