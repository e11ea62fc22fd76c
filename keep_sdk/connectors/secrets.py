"""Secrets in connector settings: a value that never prints, and the redaction of its text.

A `Secret` holds a credential resolved from the environment or a secrets file
(`keep_sdk.config` does the resolving). Its ``str``, ``repr`` and pydantic
serialisation are ``***``; only `reveal` gives the value, to the code that
sends it. `redact` removes every known secret value from a text before it is
stored, logged or shown.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

__all__ = ["MASK", "Redactor", "Secret", "redact", "secrets_in"]

MASK = "***"


class Secret:
    """A credential. Prints, compares in logs and serialises as ``***``; `reveal` gives it."""

    __slots__ = ("_parts", "_value", "source")

    def __init__(
        self, value: str, *, source: str = "a secret", parts: tuple[str, ...] = ()
    ) -> None:
        self._value = value
        self._parts = tuple(p for p in (value, *parts) if p)
        self.source = source

    @property
    def parts(self) -> tuple[str, ...]:
        """The value and every referenced value inside it (``Bearer ${TOKEN}`` has the token):
        what `redact` masks."""
        return self._parts

    def reveal(self) -> str:
        """The value, for the one place that sends it to the external system."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK})"

    def __str__(self) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled")

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _validate_secret,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda _value: MASK, when_used="always"
            ),
            json_schema_input_schema=core_schema.str_schema(),
        )


def _validate_secret(value: Any) -> Secret:
    if isinstance(value, Secret):
        return value
    raise PydanticCustomError(
        "secret_inlined",
        "a secret must not be written in the configuration; write a reference such as "
        '"${ENV_VAR}" (from the environment) or "${file:NAME}" (from the secrets file)',
    )


def secrets_in(value: Any) -> list[Secret]:
    """Every `Secret` inside `value` (models, mappings, sequences), in order of appearance."""
    found: list[Secret] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Secret):
            found.append(item)
        elif hasattr(item, "__pydantic_fields__") and not isinstance(item, type):
            stack.extend(getattr(item, name) for name in item.__pydantic_fields__)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
    return found


_JSON_SHORT = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _char_forms(char: str) -> str:
    r"""A pattern for `char` written as itself, as a JSON ``\uXXXX`` escape, or percent-encoded."""
    forms = [re.escape(char)]
    code = ord(char)
    if code <= 0xFFFF:
        forms.append(f"(?i:\\\\u{code:04x})")
    else:
        high = 0xD800 + ((code - 0x10000) >> 10)
        low = 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms.append(f"(?i:\\\\u{high:04x}\\\\u{low:04x})")
    forms.append("(?i:" + "".join(f"%{b:02x}" for b in char.encode("utf-8")) + ")")
    if char in _JSON_SHORT:
        forms.append(re.escape(_JSON_SHORT[char]))
    if char == " ":
        forms.append(r"\+")
    return "(?:" + "|".join(forms) + ")"


def _base64_forms(raw: str) -> set[str]:
    data = raw.encode("utf-8")
    found: set[str] = set()
    for text in (base64.b64encode(data), base64.urlsafe_b64encode(data)):
        decoded = text.decode("ascii")
        found.update({decoded, decoded.rstrip("=")})
    return found


class Redactor:
    r"""Masks a fixed set of secrets in texts; built once, cheap to call.

    Every value and referenced part of each secret is masked in every encoding it
    can come back in from a remote system: as itself, with any of its characters
    written as a JSON ``\uXXXX`` escape or percent-encoded (``%XX``, ``+`` for a
    space), and as base64 (standard or URL-safe, with or without padding). Longer
    values first, so a secret containing another is masked whole.
    """

    def __init__(self, secrets: Iterable[Secret | str]) -> None:
        values: set[str] = set()
        for secret in secrets:
            for raw in secret.parts if isinstance(secret, Secret) else (secret,):
                if raw:
                    values.add(raw)
        patterns = ["".join(map(_char_forms, raw)) for raw in sorted(values, key=len, reverse=True)]
        encoded = {form for raw in values for form in _base64_forms(raw)}
        patterns += [re.escape(form) for form in sorted(encoded, key=len, reverse=True)]
        self._pattern = re.compile("|".join(patterns)) if patterns else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        """`text` with every secret replaced by ``***``."""
        return self._pattern.sub(MASK, text) if self._pattern is not None else text


def redact(text: str, secrets: Iterable[Secret | str]) -> str:
    """`text` with every secret in `secrets` replaced by ``***`` (see `Redactor`)."""
    return Redactor(secrets)(text)
