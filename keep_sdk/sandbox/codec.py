"""The boundary codec, under the name the sandbox has always imported it by: it lives in
`keep_sdk.contract.codec`, so that the layers that check a value from outside without
running a script (a ``keep publish``, a ``keep notify``) share it."""

from keep_sdk.contract.codec import (
    MAX_SAFE_INTEGER,
    TRUNCATED,
    BoundaryError,
    Rule,
    check,
    clean_text,
    cut,
    depth_exceeds,
    encode,
    encode_sized,
    loads,
    measure,
    scan,
)

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
