"""Host code on script-controlled data is linear: 10**6-element inputs against a baseline.

No absolute times: each operation is timed at 10**4, 10**5 and 10**6 elements (best of
nine, and of three at the largest, where one scheduler delay is a small part) against a
linear baseline on the same input, timed in the same test; the ratio must stay bounded and
must not grow with the input. A quadratic operation's ratio grows tenfold per step and fails
the bound before the largest input is tried.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable

import pytest

from keep_sdk.contract import codec
from keep_sdk.model import PrepareResult, Reservation, SandboxLimits
from keep_sdk.sandbox.frames import FrameReader, write_frame

Action = Callable[[], object]
Prepared = Callable[[int], Action]

GROWTH_BOUND = 10.0


def _best(action: Action, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return max(min(times), 1e-6)


def assert_linear(operation: Prepared, baseline: Prepared, *, bound: float) -> None:
    """`operation(n)` and `baseline(n)` build their input of n elements and return the action.

    At 10**4, 10**5 and 10**6 elements the operation must stay within `bound` times the
    baseline, and that ratio may grow at most `GROWTH_BOUND`-fold from the smallest to
    the largest input (a quadratic operation's ratio grows a hundredfold).
    """
    ratios = []
    for n in (10**4, 10**5, 10**6):
        repeat = 3 if n == 10**6 else 9
        ratio = _best(operation(n), repeat) / _best(baseline(n), repeat)
        assert ratio < bound, (n, ratio)
        ratios.append(ratio)
    assert ratios[-1] / ratios[0] < GROWTH_BOUND, ratios


def ids_of(n: int) -> list[str]:
    """n messageIds, each repeated once."""
    return [f"m{i % (n // 2 + 1)}" for i in range(n)]


def test_reserved_ids_is_linear() -> None:
    def operation(n: int) -> Action:
        ids = ids_of(n)
        result = PrepareResult.model_construct(
            reservations=[
                Reservation.model_construct(topic="a", ids=ids[: n // 2]),
                Reservation.model_construct(topic="a", ids=ids[n // 2 :]),
            ]
        )
        return lambda: result.reserved_ids

    def baseline(n: int) -> Action:
        ids = ids_of(n)
        return lambda: list(dict.fromkeys(ids))

    assert_linear(operation, baseline, bound=20)


def _array_text(n: int) -> str:
    return json.dumps([{"i": i, "s": "é😀"} if i % 10 == 0 else i for i in range(n)])


def test_decoding_engine_text_is_linear() -> None:
    def operation(n: int) -> Action:
        text = _array_text(n)
        size = 4 * len(text)

        def decode() -> object:
            codec.scan(text, what="v", max_bytes=size, max_depth=64)
            value = codec.loads(text, what="v")
            return codec.check(value, root="v", max_bytes=size, max_depth=64)

        return decode

    def baseline(n: int) -> Action:
        text = _array_text(n)
        return lambda: json.loads(text)

    assert_linear(operation, baseline, bound=30)


def test_encoding_host_values_is_linear() -> None:
    def operation(n: int) -> Action:
        value = json.loads(_array_text(n))
        return lambda: codec.encode(value, root="v", max_bytes=2**40, max_depth=64)

    def baseline(n: int) -> Action:
        value = json.loads(_array_text(n))
        return lambda: json.dumps(value)

    assert_linear(operation, baseline, bound=30)


def test_depth_from_text_is_linear() -> None:
    chunk = "[" * 60 + "1" + "]" * 60

    def operation(n: int) -> Action:
        text = "[" + ",".join([chunk] * (n // 121 + 1)) + "]"
        return lambda: codec.depth_exceeds(text, 64)

    def baseline(n: int) -> Action:
        text = "[" + ",".join([chunk] * (n // 121 + 1)) + "]"
        return lambda: text.replace("[", "").replace("]", "")

    assert_linear(operation, baseline, bound=400)


def test_cleaning_and_cutting_text_is_linear() -> None:
    def operation(n: int) -> Action:
        text = "a\ud800😀" * (n // 3)
        return lambda: codec.cut(codec.clean_text(text), n // 2)

    def baseline(n: int) -> Action:
        text = "a\ud800😀" * (n // 3)
        return lambda: text.encode("utf-8", "surrogatepass")

    assert_linear(operation, baseline, bound=60)


def _through_pipe(data: bytes, framed: bool) -> Action:
    def transfer() -> object:
        read_fd, write_fd = os.pipe()
        writer = os.fdopen(write_fd, "wb")

        def write() -> None:
            if framed:
                write_frame(writer, data)
            else:
                writer.write(data)
            writer.close()

        thread = threading.Thread(target=write)
        thread.start()
        try:
            if framed:
                return FrameReader(read_fd, len(data)).read(time.monotonic() + 60)
            chunks = []
            while chunk := os.read(read_fd, 1 << 16):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            thread.join()
            os.close(read_fd)

    return transfer


@pytest.mark.parametrize("element", [b"1,", b"[1,2,3,4,5,6,7,8],"])
def test_reading_worker_frames_is_linear(element: bytes) -> None:
    def operation(n: int) -> Action:
        return _through_pipe(element * n, framed=True)

    def baseline(n: int) -> Action:
        return _through_pipe(element * n, framed=False)

    assert_linear(operation, baseline, bound=10)


def test_the_limits_used_here_are_the_defaults() -> None:
    assert SandboxLimits().max_value_depth == 64
