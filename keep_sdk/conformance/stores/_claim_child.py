"""Child-process side of the racing-claimers clause.

``python -m keep_sdk.conformance.stores._claim_child URL INVOCATION_ID OWNER START_AT``
opens the store at URL, waits until START_AT (epoch seconds), tries to claim the
invocation for an hour of its own clock, and prints ``{"claimed": true|false}``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time

from keep_sdk.conformance._support import open_url
from keep_sdk.stores import SupportsDurable

__all__ = ["main"]


def main(argv: list[str]) -> int:
    url, invocation_id, owner, start_at = argv
    store = open_url(url)
    try:
        if not isinstance(store, SupportsDurable):
            print(f"the store at {url} does not implement SupportsDurable", file=sys.stderr)
            return 2
        time.sleep(max(0.0, float(start_at) - time.time()))
        until = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
        claimed = store.claim_invocation(invocation_id, owner, until=until)
        print(json.dumps({"claimed": claimed is not None}), flush=True)
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
