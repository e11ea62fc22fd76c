"""The connector SDK: declarations, argument validation, results, errors, keys."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import keep_sdk
from keep_sdk.connectors import Connector, ConnectorSet, idempotency_key, operation
from keep_sdk.model import OperationKind, ReconcileStatus


class Note(BaseModel):
    text: str
    count: int = 1


class Notes(Connector):
    """Notes for tests."""

    name = "notes"

    def __init__(self) -> None:
        self.raise_with: Exception | None = None
        self.result: object = {"ok": True}

    @operation(kind=OperationKind.READ, permission="notes.read", args=Note)
    def list_notes(self, args: Note) -> object:
        if self.raise_with:
            raise self.raise_with
        return self.result

    @operation(kind=OperationKind.MUTATION, permission="notes.write", args=Note, name="add")
    def add_note(self, args: Note, *, idempotency_key: str) -> object:
        return {"key": idempotency_key, "text": args.text}

    @add_note.reconciler
    def reconcile_add(self, args: Note, idempotency_key: str) -> object:
        if args.text == "boom":
            raise ConnectionError("service down")
        return keep_sdk.InternalError("not an outcome")


def test_operations_are_collected_with_camel_case_names() -> None:
    assert list(Notes.operations) == ["add", "listNotes"]
    manifest = Notes.manifest()
    assert manifest.description == "Notes for tests."
    add = manifest.operation("add")
    assert add.kind is OperationKind.MUTATION
    assert add.permission == "notes.write"
    assert add.reconcilable
    assert add.arguments["required"] == ["text"]
    assert not manifest.operation("listNotes").reconcilable


def test_unknown_operation_lists_what_exists() -> None:
    with pytest.raises(keep_sdk.UnknownOperation, match="it offers: add, listNotes"):
        Notes().invoke("remove", {})


def test_unknown_connector_lists_what_exists() -> None:
    connectors = ConnectorSet([Notes()])
    with pytest.raises(keep_sdk.UnknownConnector, match="registered connectors: notes"):
        connectors.invoke("gmial", "send", {})


def test_invalid_arguments_are_readable_lines() -> None:
    with pytest.raises(keep_sdk.InvalidArguments) as info:
        Notes().invoke("listNotes", {"count": "many", "colour": 1})
    problems = info.value.problems
    assert len(problems) == 3
    assert problems[0] == "`text` is required but missing"
    assert problems[1].startswith("`count`: Input should be a valid integer")
    assert problems[2] == "`colour` is not a known field; remove it"
    assert str(info.value).startswith("invalid arguments of ctx.notes.listNotes:\n  `text`")


def test_a_mutation_needs_the_hosts_idempotency_key() -> None:
    with pytest.raises(keep_sdk.InternalError, match="without an idempotency key"):
        Notes().invoke("add", {"text": "x"})
    assert Notes().invoke("add", {"text": "x"}, idempotency_key="k") == {"key": "k", "text": "x"}


def test_connector_errors_pass_through_and_others_become_internal() -> None:
    notes = Notes()
    notes.raise_with = keep_sdk.TransientError("429", retry_after=2)
    with pytest.raises(keep_sdk.TransientError):
        notes.invoke("listNotes", {"text": "a"})
    notes.raise_with = KeyError("oops")
    with pytest.raises(keep_sdk.InternalError, match="raised KeyError"):
        notes.invoke("listNotes", {"text": "a"})


def test_a_result_that_is_not_json_is_an_internal_error() -> None:
    notes = Notes()
    notes.result = {"when": object()}
    with pytest.raises(keep_sdk.InternalError, match="not JSON"):
        notes.invoke("listNotes", {"text": "a"})


def test_a_reconcile_that_raises_means_retry() -> None:
    outcome = Notes().reconcile("add", {"text": "boom"}, "k")
    assert outcome.status is ReconcileStatus.RETRY
    assert "service down" in (outcome.detail or "")


def test_a_reconcile_returning_garbage_is_an_internal_error() -> None:
    with pytest.raises(keep_sdk.InternalError, match="not a ReconcileOutcome"):
        Notes().reconcile("add", {"text": "x"}, "k")


def test_only_mutations_reconcile() -> None:
    with pytest.raises(keep_sdk.InternalError, match="only mutations reconcile"):

        class Bad(Connector):
            name = "bad"

            @operation(kind="read", permission="bad.read", args=Note)
            def look(self, args: Note) -> None:
                return None

            @look.reconciler
            def check(self, args: Note, key: str) -> None:
                return None


def test_a_connector_name_must_be_a_js_identifier() -> None:
    with pytest.raises(keep_sdk.InternalError, match="JS identifier"):

        class Bad(Connector):
            name = "my-crm"


def test_a_permission_must_name_service_and_capability() -> None:
    with pytest.raises(keep_sdk.InternalError, match=re.escape("'<service>.<capability>'")):
        operation(kind="read", permission="read", args=Note)(lambda self, args: None)


names = st.text(min_size=1, max_size=30)


@given(names, names, names)
def test_idempotency_keys_are_deterministic_and_header_safe(w: str, h: str, r: str) -> None:
    key = idempotency_key(w, h, r)
    assert key == idempotency_key(w, h, r)
    assert key.isascii()
    assert len(key) == 45


@given(names, names, names, names)
def test_different_runs_never_share_a_key(w: str, h: str, r1: str, r2: str) -> None:
    if r1 != r2:
        assert idempotency_key(w, h, r1) != idempotency_key(w, h, r2)


def test_a_connector_manifest_is_built_once_per_class() -> None:
    assert Notes.manifest() is Notes.manifest()
    assert Notes.manifest().operation("add").reconcilable
