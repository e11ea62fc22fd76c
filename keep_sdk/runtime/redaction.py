"""Secrets out of traces: the `redact` seam every stored trace passes through.

`redact(text)` replaces what looks like a credential in free text (bearer tokens,
``password=…``-style pairs, well-known token shapes) with `REDACTED`;
`redact_value(value)` does the same inside a JSON value and also blanks the value
of any key named like a secret (``password``, ``apiKey``, ``token``…). Further
redactors (a connector's own secret shapes, say) are added with
`register_redactor` (removed with `unregister_redactor`); each is a ``str -> str``
function applied after the built-in patterns.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import JsonValue

__all__ = [
    "REDACTED",
    "Redactor",
    "redact",
    "redact_value",
    "register_redactor",
    "unregister_redactor",
]

REDACTED = "[redacted]"
"""What a secret is replaced with."""

Redactor = Callable[[str], str]
"""A function that returns its text with secrets replaced."""

_SECRET_KEYS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "secret",
        "clientsecret",
        "apikey",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "authtoken",
        "bearertoken",
        "token",
        "authorization",
        "privatekey",
        "credentials",
        "cookie",
        "sessionid",
    }
)
"""Object keys whose value is a secret, compared without case, ``_`` or ``-``
(a ``pageToken`` or ``nextPageToken`` is a cursor, not a secret)."""
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {REDACTED}"),
    (
        re.compile(
            r"(?i)\b(pass(?:word|wd)?|secret|token|api[_-]?key|client[_-]?secret)"
            r"(\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
        ),
        rf"\1\2{REDACTED}",
    ),
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),
)
_ANY_PATTERN = re.compile(
    "|".join(f"(?:{pattern.pattern.removeprefix('(?i)')})" for pattern, _ in _PATTERNS),
    re.IGNORECASE,
)
"""Matches wherever any of `_PATTERNS` could (ignoring case for all of them: a superset),
so a text it does not match is one every pattern leaves as it is."""
_extra: list[Redactor] = []


def _secret_key(key: str) -> bool:
    return key.replace("_", "").replace("-", "").lower() in _SECRET_KEYS


def register_redactor(redactor: Redactor) -> None:
    """Apply `redactor` to every text `redact` sees from now on (in this process)."""
    if redactor not in _extra:
        _extra.append(redactor)


def unregister_redactor(redactor: Redactor) -> None:
    """Stop applying `redactor` (nothing happens if it was not registered)."""
    if redactor in _extra:
        _extra.remove(redactor)


def redact(text: str) -> str:
    """`text` with every secret the built-in patterns and the registered redactors find
    replaced by `REDACTED`; text without secrets comes back unchanged."""
    if _ANY_PATTERN.search(text) is not None:
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
    for redactor in _extra:
        text = redactor(text)
    return text


def redact_value(value: JsonValue) -> JsonValue:
    """A copy of the JSON `value` with secrets redacted: every string through `redact`,
    and the whole value of any object key named like a secret replaced by `REDACTED`."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    if isinstance(value, dict):
        return {
            key: REDACTED if _secret_key(key) and item is not None else redact_value(item)
            for key, item in value.items()
        }
    return value
