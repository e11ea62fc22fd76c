"""Store URLs as a person is shown them."""

from __future__ import annotations

__all__ = ["redacted_url"]


def redacted_url(url: str, *, mask: str = "***") -> str:
    """`url` with the password of its authority (``user:password@host``), if it has one,
    replaced by `mask`: the form a terminal, a page or a log shows. Anything else is kept
    as written."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    userinfo, at, hostport = rest[:end].rpartition("@")
    user, colon, _ = userinfo.partition(":")
    if not at or not colon:
        return url
    return f"{scheme}://{user}:{mask}@{hostport}{rest[end:]}"
