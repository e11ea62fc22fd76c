"""Run one send of the mail flow and SIGKILL this process right after a store commit point.

Usage: python crash_child.py STORE_URL SMTP_PORT SENT_MAILDIR POINT (``after:<method>``).
"""

from __future__ import annotations

import sys
from typing import Any

from keep_sdk.stores import open_store
from tests.connectors.mail.flow import mail_settings, runtime
from tests.runtime.crash_child import KillAfter


def main(store_url: str, port: str, sent: str, point: str) -> None:
    store: Any = KillAfter(open_store(store_url), point.removeprefix("after:"))
    runtime(store, mail_settings(int(port), sent)).run_consumer("mail-flow", "sendReport")
    print("finished without being killed")


if __name__ == "__main__":
    main(*sys.argv[1:5])
