"""Keeping configured secrets out of log records, whichever logger or handler writes them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from keep_sdk.connectors.secrets import Redactor, Secret

__all__ = ["install_log_redaction"]

_lock = threading.Lock()
_secrets: set[Secret] = set()
_redactor = Redactor(())
_installed = False


def _redacting_factory(previous: Any) -> Any:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = previous(*args, **kwargs)
        redact = _redactor
        if not redact:
            return record
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and record.exc_info[0] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text)
        return record

    return factory


def install_log_redaction(secrets: Iterable[Secret]) -> None:
    """Mask `secrets` in the message and traceback of every log record from now on.

    Installed once per process as a log-record factory (so every logger and
    handler sees the masked text); later calls add secrets to the set.
    """
    global _installed, _redactor
    with _lock:
        _secrets.update(secrets)
        _redactor = Redactor(_secrets)
        if not _installed:
            logging.setLogRecordFactory(_redacting_factory(logging.getLogRecordFactory()))
            _installed = True
