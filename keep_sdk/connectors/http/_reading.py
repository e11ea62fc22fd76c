"""Reading an HTTP answer within a byte cap and a deadline, decompressing under the same cap.

`read_bounded` takes a streamed httpx response and returns its decoded body,
counting bytes as they arrive: the raw bytes, and the bytes each compressed chunk
expands to (``gzip`` and ``deflate`` are decoded here in bounded steps, so a small
compressed body never expands past the cap in memory). It stops at the cap or the
deadline and raises `BodyTooLarge` or `DeadlinePassed`.
"""

from __future__ import annotations

import time
import zlib

import httpx

__all__ = ["ACCEPT_ENCODING", "BodyTooLarge", "DeadlinePassed", "read_bounded"]

ACCEPT_ENCODING = "gzip, deflate"
"""The encodings keep asks for; an answer in any other is refused (not decoded)."""


class BodyTooLarge(Exception):
    """The body (decoded) is larger than the cap."""


class DeadlinePassed(Exception):
    """The deadline of the call passed while the body was read."""


class UnknownEncoding(Exception):
    """The body uses a content encoding keep does not decode."""


def _decoder(encoding: str) -> zlib._Decompress | None:
    names = [part.strip().lower() for part in encoding.split(",") if part.strip()]
    names = [name for name in names if name != "identity"]
    if not names:
        return None
    if names == ["gzip"] or names == ["x-gzip"]:
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if names == ["deflate"]:
        return zlib.decompressobj()
    raise UnknownEncoding(encoding)


def read_bounded(response: httpx.Response, *, max_bytes: int, deadline: float) -> bytes:
    """The decoded body of streamed `response`: at most `max_bytes`, read before `deadline`
    (a ``time.monotonic`` instant). Raises `BodyTooLarge`, `DeadlinePassed` or
    `UnknownEncoding`; the response is closed either way."""
    try:
        declared = response.headers.get("Content-Length", "")
        if (
            declared.isdigit()
            and int(declared) > max_bytes
            and not response.headers.get("Content-Encoding")
        ):
            raise BodyTooLarge
        decoder = _decoder(response.headers.get("Content-Encoding", ""))
        body = bytearray()
        raw_seen = 0
        for chunk in response.iter_raw():
            raw_seen += len(chunk)
            if raw_seen > max_bytes:
                raise BodyTooLarge
            if decoder is None:
                body += chunk
            else:
                data = chunk
                while data:
                    room = max_bytes - len(body) + 1
                    body += decoder.decompress(data, room)
                    if len(body) > max_bytes:
                        raise BodyTooLarge
                    data = decoder.unconsumed_tail
            if len(body) > max_bytes:
                raise BodyTooLarge
            if time.monotonic() > deadline:
                raise DeadlinePassed
        if decoder is not None:
            body += decoder.flush()
            if len(body) > max_bytes:
                raise BodyTooLarge
        return bytes(body)
    except zlib.error as exc:
        raise UnknownEncoding(f"a body that does not decode ({exc})") from None
    finally:
        response.close()
