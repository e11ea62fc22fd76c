"""The fault points: where a store calls its ``fault_hook`` inside a commit point.

Each point sits between two writes of one commit point, so a hook that raises
there proves the commit point is all or nothing. The names are the contract
between the commit points (`keep_sdk.stores.TransactionalStore`), stores that
call the hook themselves, and the crash tests that arm it.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FaultPoint"]


class FaultPoint(StrEnum):
    """A named place between the writes of a commit point (the hook receives the value)."""

    DEPLOY_VERSION = "deploy.version"
    DEPLOY_HANDLERS = "deploy.handlers"
    PAUSE_WORKFLOW = "pause.workflow"
    RESUME_WORKFLOW = "resume.workflow"
    GRANT_WORKFLOW = "grant.workflow"
    REVOKE_WORKFLOW = "revoke.workflow"
    SKIP_EVENT = "skip_event.event"
    BEGIN_RUN = "begin_run.run"
    SAVE_PREPARE_EVENT = "save_prepare_result.event"
    SAVE_PREPARE_RUN = "save_prepare_result.run"
    SET_RUN_STATUS = "set_run_status.run"
    COMMIT_CONSUMER_EVENT = "commit_consumer_run.event"
    COMMIT_CONSUMER_STATE = "commit_consumer_run.state"
    COMMIT_CONSUMER_PUBLISH = "commit_consumer_run.publish"
    COMMIT_PRODUCER_STATE = "commit_producer_run.state"
    COMMIT_PRODUCER_PUBLISH = "commit_producer_run.publish"
    LEDGER_ENTRY = "ledger.entry"
    RESOLVE_ENTRY = "resolve_mutation.entry"
    DURABLE_INTENT = "record_durable_intent.invocation"
    DURABLE_ANSWER = "record_start_answer.run"
    APPLY_NOTIFICATION = "apply_notification.run"
