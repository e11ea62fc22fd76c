"""The boundary codec: the one check every value crossing the sandbox boundary passes.

A value may cross (arguments of a ctx call, a host result, a handler's arguments,
its return value, a publish) only as **strict JSON**:

- numbers are finite; an integer lies within ±(2**53 - 1) (``Number.MAX_SAFE_INTEGER``),
  and so does an integral number below 1e21 (JavaScript prints those as integers);
  ``NaN``, ``Infinity`` and ``1e999`` never cross;
- strings and object keys hold Unicode scalar values only (no lone surrogate);
- nesting is at most ``max_depth`` (a scalar is depth 0, each array or object
  adds 1), measured on the value itself;
- its size is the number of **UTF-8 bytes of its canonical JSON** (`encode`:
  compact separators, non-ASCII characters unescaped, Python's float repr),
  at most ``max_bytes``. Both directions measure with this one function, so a value
  accepted in one direction is accepted in the other.

Text from the engine is checked before the host builds Python objects of it
(`scan`: its length and bracket nesting, in linear time) and parsed by `loads`,
whose hooks turn a non-finite number or an unsafe integer into a marker that
`check` reports with the value's path. Every operation here is linear in the size
of its input. A value that fails raises `BoundaryError`, which names the path
(``event.payload.items[3].price``), the rule it broke and what to do.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Final, Literal

__all__ = [
    "MAX_SAFE_INTEGER",
    "TRUNCATED",
    "BoundaryError",
    "Rule",
    "check",
    "clean_text",
    "cut",
    "depth_exceeds",
    "encode",
    "encode_sized",
    "loads",
    "measure",
    "scan",
]

MAX_SAFE_INTEGER: Final = 2**53 - 1
TRUNCATED: Final = "…[truncated]"

Rule = Literal["size", "depth", "number", "integer", "text", "type"]

_ENCODER: Final = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
)
_STRUCTURE: Final = bytes(b for b in range(256) if b not in b'[]{}"')
_INNERMOST: Final = re.compile(rb"\[\]|\{\}")
_NUMBER_SHAPES: Final = bytes(
    ord("0") if chr(b).isdigit() and b < 128 else b if b in b"eE+" else ord(" ") for b in range(256)
)
_LONG_INTEGER: Final = b"0" * 16
_JS_EXPONENT_FROM: Final = 1e21
_WALK_DEPTH: Final = 100_000
_IDENTIFIER: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_UNSTORABLE: Final = re.compile("[\ud800-\udfff\x00]")


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _make_dumps() -> Callable[[Any], str]:
    if c_make_encoder is None:
        return _ENCODER.encode
    chunks = c_make_encoder(None, _not_json, encode_basestring, None, ":", ",", False, False, False)

    def dumps(value: Any) -> str:
        return "".join(chunks(value, 0))

    return dumps


_dumps: Final = _make_dumps()


class BoundaryError(Exception):
    """A value broke a rule of the boundary.

    `rule` is one of ``size``, ``depth`` (limits), ``number``, ``integer``, ``text``
    or ``type`` (not JSON); `path` locates the value (``event.payload[2]``);
    `message` is the full sentence for the script's author.
    """

    def __init__(self, rule: Rule, path: str, message: str) -> None:
        super().__init__(message)
        self.rule: Rule = rule
        self.path = path
        self.message = message

    @property
    def is_limit(self) -> bool:
        """True for the size and depth limits; the other rules are logic errors."""
        return self.rule in ("size", "depth")


class _Invalid:
    """A number `loads` refused, kept in place until `check` reports its path."""

    __slots__ = ("rule", "token")

    def __init__(self, rule: Rule, token: str) -> None:
        self.rule: Rule = rule
        self.token = token


def _parse_int(token: str) -> int | _Invalid:
    if len(token) <= 17:
        value = int(token)
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
    return _Invalid("integer", token)


def _unsafe_integral(value: float) -> bool:
    """A float JavaScript would print as an integer beyond the safe range."""
    return MAX_SAFE_INTEGER < abs(value) < _JS_EXPONENT_FROM and value.is_integer()


def _parse_float(token: str) -> float | _Invalid:
    value = float(token)
    if not math.isfinite(value):
        return _Invalid("number", token)
    return _Invalid("integer", token) if _unsafe_integral(value) else value


def _parse_constant(token: str) -> _Invalid:
    return _Invalid("number", token)


_DECODER: Final = json.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant
)
_SCAN_ONCE: Final[Callable[[str, int], tuple[Any, int]]] = _DECODER.scan_once  # type: ignore[attr-defined]


def cut(text: str, limit: int) -> str:
    """`text` with at most `limit` code points, ending in `TRUNCATED` when cut.

    Counts code points (a Python ``str`` index), so it never splits a character.
    """
    if len(text) <= limit:
        return text
    if limit < 2 * len(TRUNCATED):
        return text[:limit]
    return text[: limit - len(TRUNCATED)] + TRUNCATED


def clean_text(text: str) -> str:
    """`text` with every lone surrogate and NUL replaced by U+FFFD (text for people, not
    values): what no store's text column refuses."""
    if _UNSTORABLE.search(text) is None:
        return text
    return _UNSTORABLE.sub("\ufffd", text)


def _structure(text: str) -> bytes:
    """The brackets of JSON `text` outside strings, in order."""
    data = text.encode("utf-8", "surrogatepass")
    data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(data.translate(None, _STRUCTURE).split(b'"')[::2])


def depth_exceeds(text: str, limit: int) -> bool:
    """Whether the JSON `text` nests deeper than `limit`, read from its brackets.

    Linear: a count settles most texts; otherwise the brackets outside strings are
    extracted with byte-level translation and their innermost pairs peeled off at
    most `limit` times. Malformed bracket structure is left for the parser to refuse.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _structure(text)
    for _ in range(limit):
        peeled = _INNERMOST.sub(b"", brackets)
        if not peeled or peeled == brackets:
            return False
        brackets = peeled
    return bool(brackets)


def _may_hold_unsafe_numbers(text: str) -> bool:
    """Whether canonical JSON `text` has a run of 16 digits or a positive exponent."""
    shapes = text.encode("utf-8", "surrogatepass").translate(_NUMBER_SHAPES)
    return _LONG_INTEGER in shapes or b"e+0" in shapes or b"E+0" in shapes


def scan(text: str, *, what: str, max_bytes: int, max_depth: int, envelope: int = 0) -> None:
    """Check engine text before it is parsed: its length and its nesting.

    The text may hold a value of at most `max_bytes` canonical bytes plus `envelope`
    code points around it; it is refused unparsed above ``2 * max_bytes + envelope``
    code points, which no such value reaches (the engine writes numbers at most 1.6
    times longer than the canonical form, and a code point is at least one byte).
    The exact size is measured by `check` after parsing. Raises `BoundaryError`
    (``size`` or ``depth``) naming `what`.
    """
    if len(text) > 2 * max_bytes + envelope:
        raise BoundaryError(
            "size",
            what,
            f"{what} is more than {max_bytes} bytes of JSON, the limit; send less (page "
            "through it, keep ids instead of whole records)",
        )
    if depth_exceeds(text, max_depth):
        raise BoundaryError(
            "depth",
            what,
            f"{what} nests arrays/objects deeper than {max_depth} levels; flatten it",
        )


def loads(text: str, *, what: str) -> Any:
    """Parse JSON `text` from the engine; numbers that break a rule become markers.

    Call `scan` first. Raises `BoundaryError` (``type``) for text that is not JSON.
    """
    try:
        value, end = _SCAN_ONCE(text, 0)
    except RecursionError:
        raise BoundaryError(
            "depth", what, f"{what} nests arrays/objects too deeply; flatten it"
        ) from None
    except (StopIteration, ValueError):
        raise BoundaryError("type", what, f"{what} is not valid JSON") from None
    if end != len(text) and not text[end:].isspace():
        raise BoundaryError("type", what, f"{what} is not valid JSON (extra data)")
    return value


def _key_path(path: str, key: str) -> str:
    if _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(cut(key, 40), ensure_ascii=False)}]"


class _Named(str):
    """The name of an item of an argument list (``event``), which starts its path."""

    __slots__ = ()


Trail = tuple[Any, str | int] | None
"""A path as a linked list ``(parent_trail, key or index)``; rendered only when reported."""


def _render(root: str, trail: Trail) -> str:
    parts: list[str | int] = []
    while trail is not None:
        trail, part = trail
        parts.append(part)
    path = root
    for part in reversed(parts):
        if isinstance(part, int):
            path += f"[{part}]"
        elif isinstance(part, _Named):
            path = str(part)
        else:
            path = _key_path(path, part)
        if len(path) > 300:
            return cut(path, 300)
    return path


def _walk(value: Any, roots: tuple[str, ...]) -> Iterator[tuple[Trail, Any, int]]:
    """Every (trail, item, depth) of `value`, depth first, in document order (root: 0).

    With `roots`, `value` is an argument list and its items are named by them. Linear:
    a trail shares its parent's, so no path is built until one is reported.
    """
    stack: list[tuple[Trail, Any, int]] = [(None, value, 0)]
    while stack:
        trail, item, depth = stack.pop()
        yield trail, item, depth
        if roots and depth == 0 and isinstance(item, list):
            names = [roots[i] if i < len(roots) else f"argument {i + 1}" for i in range(len(item))]
            stack.extend(
                reversed([((None, _Named(names[i])), child, 1) for i, child in enumerate(item)])
            )
        elif isinstance(item, dict):
            stack.extend(
                reversed([((trail, str(key)), child, depth + 1) for key, child in item.items()])
            )
        elif isinstance(item, list):
            stack.extend(
                reversed([((trail, index), child, depth + 1) for index, child in enumerate(item)])
            )


def _key_problem(path: str, item: dict[Any, Any]) -> BoundaryError | None:
    for key in item:
        if not isinstance(key, str):
            return BoundaryError("type", path, f"`{path}` has a key that is not a string")
        if _SURROGATE.search(key) is not None:
            where = _key_path(path, clean_text(key))
            return BoundaryError(
                "text", where, f"the key of `{where}` holds a lone UTF-16 surrogate; remove it"
            )
    return None


def _problem(item: Any) -> tuple[Rule, str] | None:
    if isinstance(item, _Invalid):
        if item.rule == "integer":
            return (
                "integer",
                f"is the integer {cut(item.token, 40)}, outside ±{MAX_SAFE_INTEGER} "
                "(Number.MAX_SAFE_INTEGER): JavaScript cannot hold it exactly; pass it as a string",
            )
        return (
            "number",
            f"is {cut(item.token, 40)}, which is not a finite number; JSON carries only "
            "finite numbers: use null or a string",
        )
    if isinstance(item, bool) or item is None:
        return None
    if isinstance(item, int):
        if -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            return None
        return (
            "integer",
            f"is an integer outside ±{MAX_SAFE_INTEGER} (Number.MAX_SAFE_INTEGER); pass it "
            "as a string",
        )
    if isinstance(item, float):
        if math.isfinite(item) and _unsafe_integral(item):
            return (
                "integer",
                f"is {item!r}, an integer beyond ±{MAX_SAFE_INTEGER} that JavaScript cannot "
                "hold exactly; pass it as a string",
            )
        if math.isfinite(item):
            return None
        shown = "NaN" if math.isnan(item) else ("Infinity" if item > 0 else "-Infinity")
        return ("number", f"is {shown}, which is not a finite number; use null or a string")
    if isinstance(item, str):
        if _SURROGATE.search(item) is None:
            return None
        return (
            "text",
            "holds a lone UTF-16 surrogate (half of an emoji or a broken \\uD8xx escape), "
            "which is not valid Unicode; slice strings with Array.from(s) or remove it",
        )
    if isinstance(item, list | dict):
        return None
    return ("type", f"is a {type(item).__name__}, which is not JSON")


def _find(
    value: Any, root: str, max_depth: int | None, roots: tuple[str, ...] = ()
) -> BoundaryError | None:
    limit = _WALK_DEPTH if max_depth is None else max_depth
    for trail, item, depth in _walk(value, roots):
        if isinstance(item, dict | list):
            if depth + 1 > limit:
                shown = _render(root, trail)
                return BoundaryError(
                    "depth",
                    shown,
                    f"`{shown}` is an array/object at nesting level {depth + 1}, deeper than the "
                    f"limit of {limit} levels; flatten it",
                )
            if isinstance(item, dict):
                found = _key_problem(_render(root, trail), item) if _bad_keys(item) else None
                if found is not None:
                    return found
            continue
        problem = _problem(item)
        if problem is not None:
            rule, text = problem
            shown = _render(root, trail)
            return BoundaryError(rule, shown, f"`{shown}` {text}")
    return None


def _bad_keys(item: dict[Any, Any]) -> bool:
    return any(not isinstance(key, str) or _SURROGATE.search(key) for key in item)


def _fail(
    value: Any, root: str, max_depth: int | None, fallback: str, roots: tuple[str, ...]
) -> BoundaryError:
    found = _find(value, root, max_depth, roots)
    return found if found is not None else BoundaryError("type", root, f"`{root}` {fallback}")


def encode_sized(
    value: Any, *, root: str, max_bytes: int, max_depth: int, roots: tuple[str, ...] = ()
) -> tuple[str, int]:
    """The canonical JSON of `value` and its size, after checking every rule of the boundary.

    `root` names the value in messages (``state``, ``result``); for an argument
    list, `roots` names its items (``("topic", "event")``) so that paths read
    ``event.payload.items[3]``. Raises `BoundaryError`. Linear in the size of `value`.
    """
    try:
        text = _dumps(value)
    except RecursionError:
        raise _fail(value, root, max_depth, "nests too deeply", roots) from None
    except (TypeError, ValueError):
        raise _fail(value, root, None, "is not JSON", roots) from None
    if text.isascii():
        size = len(text)
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise _fail(value, root, None, "is not valid Unicode", roots) from None
    if size > max_bytes:
        raise BoundaryError(
            "size",
            root,
            f"`{root}` is {size} bytes of JSON, more than the limit of {max_bytes}; send less "
            "(page through it, keep ids instead of whole records)",
        )
    if depth_exceeds(text, max_depth) or (
        _may_hold_unsafe_numbers(text) and _find(value, root, None, roots) is not None
    ):
        raise _fail(value, root, max_depth, "breaks a rule of the boundary", roots)
    return text, size


def encode(
    value: Any, *, root: str, max_bytes: int, max_depth: int, roots: tuple[str, ...] = ()
) -> str:
    """The canonical JSON of `value` after every check of `encode_sized`."""
    return encode_sized(value, root=root, max_bytes=max_bytes, max_depth=max_depth, roots=roots)[0]


def check(
    value: Any, *, root: str, max_bytes: int, max_depth: int, roots: tuple[str, ...] = ()
) -> int:
    """Check `value` (parsed by `loads` or built by the host); return its canonical size."""
    return encode_sized(value, root=root, max_bytes=max_bytes, max_depth=max_depth, roots=roots)[1]


def measure(value: Any) -> int:
    """UTF-8 bytes of the canonical JSON of a value that already crossed the boundary."""
    text = _dumps(value)
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
