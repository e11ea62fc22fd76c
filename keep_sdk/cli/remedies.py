"""What a person can do, spelled as complete ``keep`` commands for one store.

The status read model (`keep_sdk.status`) says what can be done as data (`Remedy`);
only the command line turns that into commands, here.
"""

from __future__ import annotations

import shlex

from keep_sdk.status import Remedy, RemedyKind
from keep_sdk.stores import DEFAULT_STORE_URL, redacted_url

__all__ = ["command"]


def _run(remedy: Remedy) -> str:
    assert remedy.run_id is not None, f"a {remedy.kind.value} remedy names its run"
    return remedy.run_id


def command(remedy: Remedy, *, store_url: str) -> str:
    """The ``keep`` command that does `remedy` on the store at `store_url`: full ids,
    arguments quoted for a POSIX shell, and ``--store URL`` unless it is the default
    store. A placeholder the person fills in (``FILE``, ``JSON``, a store URL's
    ``PASSWORD``) is in capitals."""
    shown = redacted_url(store_url, mask="PASSWORD")
    suffix = "" if store_url == DEFAULT_STORE_URL else f" --store {shlex.quote(shown)}"
    workflow = shlex.quote(remedy.workflow)
    match remedy.kind:
        case RemedyKind.DEPLOY:
            return f"keep run FILE{suffix}  (deploy a fixed script)"
        case RemedyKind.RESUME:
            return f"keep resume {workflow}{suffix}"
        case RemedyKind.GRANT:
            return f"keep grant {workflow} {shlex.quote(remedy.permission or '')}{suffix}"
        case RemedyKind.RESOLVE:
            choice = remedy.choice.value if remedy.choice else ""
            result = " --result JSON" if choice == "happened" else ""
            return f"keep resolve {_run(remedy)} --{choice}{result}{suffix}"
        case RemedyKind.EXTEND:
            return f"keep wait {_run(remedy)} --extend P7D{suffix}"
        case RemedyKind.START_AGAIN:
            return f"keep wait {_run(remedy)} --start-again{suffix}"
        case RemedyKind.SUPPLY:
            return f"keep wait {_run(remedy)} --supply JSON{suffix}"
        case RemedyKind.SKIP_WAIT:
            return f"keep wait {_run(remedy)} --skip{suffix}"
        case RemedyKind.NOTIFY:
            key = shlex.quote(remedy.correlation_key or "")
            return f"keep notify {key} --result JSON{suffix}"
        case RemedyKind.CANCEL:
            return f"keep cancel {_run(remedy)}{suffix}"
