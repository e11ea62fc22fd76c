"""The console's token and its CSRF protection.

Every request but the static files and ``/login`` carries the token: the
``Authorization: Bearer`` header (the JSON API), or the HttpOnly, SameSite=Strict
cookie that ``/login?token=…`` sets (the browser). A form posts a CSRF value
derived from the token; a POST from the browser without it is refused before
anything is read. An API POST must carry the header (a cookie alone is refused),
which another site's page cannot set.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["COOKIE", "Guard"]

COOKIE = "keep_console"


class Guard:
    """Checks tokens and CSRF values for one console token."""

    def __init__(self, token: str) -> None:
        self._token = token
        self.csrf = hmac.new(token.encode(), b"keep-console-csrf", hashlib.sha256).hexdigest()

    def token_ok(self, given: str | None) -> bool:
        """Whether `given` is the token (compared in constant time)."""
        return given is not None and hmac.compare_digest(given.encode(), self._token.encode())

    def bearer_ok(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header carries the token as a bearer token."""
        if not authorization:
            return False
        scheme, _, value = authorization.partition(" ")
        return scheme.lower() == "bearer" and self.token_ok(value.strip())

    def csrf_ok(self, given: str | None) -> bool:
        """Whether a form's CSRF value is this console's."""
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())
