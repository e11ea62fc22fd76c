"""A stdio MCP proxy for the tests: forwards to a server and logs each JSON-RPC method.

Run as ``python mcp_proxy.py LOG SERVER ARGS...``: it starts ``python SERVER ARGS...``,
passes every line of its stdin to the server and every line of the server's stdout
back, and appends the ``method`` of each request it forwards to LOG, so a test can
count the ``tools/call`` requests a server received.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import IO


def _pump(source: IO[bytes], target: IO[bytes]) -> None:
    for line in iter(source.readline, b""):
        target.write(line)
        target.flush()


def main() -> None:
    log, server, *args = sys.argv[1:]
    child = subprocess.Popen(
        [sys.executable, server, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert child.stdin is not None
    assert child.stdout is not None
    threading.Thread(target=_pump, args=(child.stdout, sys.stdout.buffer), daemon=True).start()
    for line in iter(sys.stdin.buffer.readline, b""):
        try:
            method = json.loads(line).get("method")
        except ValueError:
            method = None
        if method:
            with open(log, "a", encoding="utf-8") as out:
                out.write(method + "\n")
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
    child.wait()


if __name__ == "__main__":
    main()
