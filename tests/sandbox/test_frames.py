"""Length-prefixed frames between the parent and a worker: caps, end of stream, deadlines."""

from __future__ import annotations

import io
import os
import time

import pytest

from keep_sdk.sandbox.frames import (
    FrameError,
    FrameReader,
    FrameTimeout,
    read_frame,
    write_frame,
)


def test_frames_round_trip_through_a_stream() -> None:
    stream = io.BytesIO()
    write_frame(stream, b'{"a":1}')
    write_frame(stream, b"")
    write_frame(stream, "日本".encode())
    stream.seek(0)
    assert [read_frame(stream) for _ in range(4)] == [b'{"a":1}', b"", "日本".encode(), None]


def test_a_reader_refuses_a_frame_over_its_cap_before_reading_it() -> None:
    read_fd, write_fd = os.pipe()
    try:
        with os.fdopen(os.dup(write_fd), "wb") as writer:
            write_frame(writer, b"x" * 100)
        with pytest.raises(FrameError, match="over the cap"):
            FrameReader(read_fd, 99).read(time.monotonic() + 5)
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_a_reader_reports_end_of_stream_and_deadlines() -> None:
    read_fd, write_fd = os.pipe()
    try:
        reader = FrameReader(read_fd, 1_000)
        os.write(write_fd, b"\x00\x00")
        with pytest.raises(FrameTimeout):
            reader.read(time.monotonic() + 0.05)
        os.close(write_fd)
        write_fd = -1
        with pytest.raises(FrameError, match="closed"):
            FrameReader(read_fd, 1_000).read(time.monotonic() + 5)
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)
