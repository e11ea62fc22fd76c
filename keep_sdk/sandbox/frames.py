"""Length-prefixed frames on the pipe between the parent and a sandbox worker.

A frame is a 4-byte big-endian length followed by that many bytes (one JSON
message). Reading is linear in the frame's size: the reader allocates the frame
once and fills it in place, never rescanning or concatenating what it has read.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from collections.abc import Set
from typing import IO, Any, Final

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

__all__ = [
    "DONE_HEAD",
    "FrameError",
    "FrameReader",
    "FrameTimeout",
    "model_message",
    "read_frame",
    "write_frame",
]

_HEADER: Final = struct.Struct(">I")

DONE_HEAD: Final = b'{"type":"done","result":'
"""How the frame that ends a phase begins; the result's JSON follows, then ``}``."""


def model_message(
    envelope: dict[str, Any], key: str, model: BaseModel, exclude: Set[str] = frozenset()
) -> bytes:
    """The JSON object `envelope` with `model` (less `exclude`) under `key`, last.

    The model is encoded by pydantic in one pass, and the bytes begin with the compact
    head: `envelope`'s members without spaces, then ``"key":``; so the message that ends a
    phase begins with `DONE_HEAD` and the parent can validate the model from the bytes
    after it. A model holding a lone surrogate (which UTF-8 cannot carry) is sent as
    ASCII JSON with ``\\u`` escapes and spaces after the separators instead: such a
    message never begins with a compact head and is read with `json.loads`.
    """
    try:
        body = model.model_dump_json(exclude=set(exclude)).encode("utf-8")
    except PydanticSerializationError:
        whole = {**envelope, key: model.model_dump(mode="json", exclude=set(exclude))}
        return json.dumps(whole).encode("ascii")
    head = json.dumps({**envelope, key: None}, separators=(",", ":"))[: -len("null}")]
    return head.encode("utf-8") + body + b"}"


class FrameError(Exception):
    """The peer closed the pipe or sent a frame over the size cap."""


class FrameTimeout(Exception):
    """The deadline passed before a whole frame arrived."""


def write_frame(stream: IO[bytes], data: bytes) -> None:
    """Write one frame and flush."""
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> bytes | None:
    """Read one frame from a blocking binary stream; None at end of stream."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return data


class FrameReader:
    """Reads frames from a file descriptor under a deadline, refusing frames over `max_bytes`.

    `read_s` accumulates the time spent waiting for and copying frame bytes.
    """

    def __init__(self, fd: int, max_bytes: int) -> None:
        self._fd = fd
        self.max_bytes = max_bytes
        self.read_s = 0.0

    def _fill(self, view: memoryview, deadline: float) -> None:
        filled = 0
        while filled < len(view):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise FrameTimeout
            ready, _, _ = select.select([self._fd], [], [], remaining)
            if not ready:
                continue
            count = os.readv(self._fd, [view[filled:]])
            if count == 0:
                raise FrameError("the pipe was closed")
            filled += count

    def read(self, deadline: float) -> bytes:
        """The next frame; raises `FrameTimeout` at `deadline`, `FrameError` on EOF or a cap."""
        header = bytearray(_HEADER.size)
        self._fill(memoryview(header), deadline)
        started = time.monotonic()
        (size,) = _HEADER.unpack(header)
        if size > self.max_bytes:
            raise FrameError(f"a frame of {size} bytes is over the cap of {self.max_bytes}")
        data = bytearray(size)
        try:
            self._fill(memoryview(data), deadline)
        finally:
            self.read_s += time.monotonic() - started
        return bytes(data)
