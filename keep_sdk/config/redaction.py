"""Keeping configured secrets out of log records, whichever logger or handler writes them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from keep_sdk.connectors.secrets import Secret, redact

__all__ = ["install_log_redaction"]

_lock = threading.Lock()
_secrets: set[Secret] = set()
_installed = False


def _redacting_factory(previous: Any) -> Any:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = previous(*args, **kwargs)
        secrets = tuple(_secrets)
        if not secrets:
            return record
        message = record.getMessage()
        cleaned = redact(message, secrets)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and record.exc_info[0] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text, secrets)
        return record

    return factory


def install_log_redaction(secrets: Iterable[Secret]) -> None:
    """Mask `secrets` in the message and traceback of every log record from now on.

    Installed once per process as a log-record factory (so every logger and
    handler sees the masked text); later calls add secrets to the set.
    """
    global _installed
    with _lock:
        _secrets.update(secrets)
        if not _installed:
            logging.setLogRecordFactory(_redacting_factory(logging.getLogRecordFactory()))
            _installed = True
