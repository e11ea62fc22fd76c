"""A hostile MCP server over stdio, speaking raw JSON-RPC lines (no SDK, so it can misbehave).

Run as ``python hostile_server.py [--huge-bytes N] [--garbage] [--hang-s S]``. Its tools:

- ``lookup`` (read): answers ``{"found": true}``, or, with ``--huge-bytes N``, a text
  result of N bytes written in 1 MiB pieces; with ``--garbage`` a line that is not
  JSON-RPC comes first; with ``--hang-s S`` it answers after S seconds.
- ``hasOwnProperty`` (read), only with ``--collide``: answers ``{}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

READ = {"readOnlyHint": True}


def _send(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def _tools(options: argparse.Namespace) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {}}
    tools = [{"name": "lookup", "inputSchema": schema, "annotations": READ}]
    if options.collide:
        tools.append({"name": "hasOwnProperty", "inputSchema": schema, "annotations": READ})
    return tools


def _huge(ident: Any, size: int) -> None:
    head = json.dumps({"jsonrpc": "2.0", "id": ident})[:-1]
    out = sys.stdout.buffer
    out.write(head.encode() + b', "result": {"content": [{"type": "text", "text": "')
    piece = b"x" * (1024 * 1024)
    left = size
    while left > 0:
        out.write(piece[: min(left, len(piece))])
        left -= len(piece)
    out.write(b'"}]}}\n')
    out.flush()


def _answer(request: dict[str, Any], options: argparse.Namespace) -> None:
    method, ident = request.get("method"), request.get("id")
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": _tools(options)}
    elif method == "tools/call":
        if options.garbage:
            sys.stdout.buffer.write(b"this is not JSON-RPC {\n")
            sys.stdout.buffer.flush()
        if options.hang_s:
            time.sleep(options.hang_s)
        if options.huge_bytes:
            _huge(ident, options.huge_bytes)
            return
        result = {"content": [{"type": "text", "text": json.dumps({"found": True})}]}
    elif ident is None:
        return
    else:
        result = {}
    _send({"jsonrpc": "2.0", "id": ident, "result": result})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--huge-bytes", type=int, default=0)
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--collide", action="store_true")
    parser.add_argument("--hang-s", type=float, default=0.0)
    options = parser.parse_args()
    for line in sys.stdin.buffer:
        if line.strip():
            _answer(json.loads(line), options)


if __name__ == "__main__":
    main()
