"""Durable operations in the console: the notification endpoint and cancelling a wait."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from keep_sdk.console import ConsoleSettings, create_app
from keep_sdk.model import RunStatus
from tests.console.server import served
from tests.console.stores import TOKEN, opened
from tests.console.test_app import ACTOR, BEARER, csrf, signed_in, snapshot
from tests.durable.test_cli_document_request import installed, request, waiting

__all__ = ["installed"]


@pytest.fixture
def parked(installed: tuple[Path, str]) -> tuple[str, str]:
    """A store whose document-request run is parked; its correlation key."""
    script, store = installed
    request(script, store, "case-1")
    [wait] = waiting(store)
    key = re.search(r"kc-[0-9a-f]{40}", str(wait["why"])).group(0)  # type: ignore[union-attr]
    return store, key


@pytest.fixture
def client(parked: tuple[str, str]) -> Iterator[httpx.Client]:
    store, _ = parked
    inst = opened(store)
    app = create_app(ConsoleSettings(store_url=store, token=TOKEN, actor=ACTOR), inst)
    try:
        with served(app) as base, httpx.Client(base_url=base, timeout=60) as http:
            http.app_store = inst.store  # type: ignore[attr-defined]
            yield http
    finally:
        inst.close()


def test_a_notification_completes_the_parked_run_once(
    client: httpx.Client, parked: tuple[str, str]
) -> None:
    _, key = parked
    store = client.app_store  # type: ignore[attr-defined]
    before = snapshot(store)
    for path, body, status in [
        (f"/api/notify/{key}", b"{not json", 400),
        ("/api/notify/kc-nope", b"{}", 400),
        (f"/api/notify/kc-{'0' * 40}", b"{}", 404),
    ]:
        answer = client.post(path, content=body, headers=BEARER)
        assert answer.status_code == status, answer.text
        assert answer.json()["error"]
    assert client.post(f"/api/notify/{key}", content=b"{}").status_code == 401
    assert snapshot(store) == before
    body = json.dumps({"file": "passport.pdf"})
    done = client.post(f"/api/notify/{key}", content=body, headers=BEARER)
    assert done.status_code == 202, done.text
    assert done.json()["notification"]["outcome"] == "applied"
    assert done.json()["run"]["status"] == RunStatus.COMMITTED.value
    again = client.post(f"/api/notify/{key}", content=body, headers=BEARER)
    assert again.status_code == 409
    assert again.json()["notification"]["outcome"] == "duplicate"
    [published] = store.list_events("document-request", topic="document.received")
    assert published.payload == {"file": "passport.pdf"}


def test_a_person_cancels_a_wait_from_the_run_page(
    client: httpx.Client, parked: tuple[str, str]
) -> None:
    store = client.app_store  # type: ignore[attr-defined]
    [run] = [r for r in store.list_runs() if r.status is RunStatus.PAUSED_WAITING]
    page = signed_in(client).get(f"/runs/{run.id}")
    assert "Cancel the wait" in page.text
    form = {"csrf": csrf(client, f"/runs/{run.id}"), "action": "cancel", "run": run.id}
    answer = client.post("/actions", data=form, follow_redirects=False)
    assert answer.status_code in (200, 303), answer.text
    ended = store.get_run(run.id)
    assert ended.status is RunStatus.COMMITTED
    assert ended.mutation_result is not None
    assert ended.mutation_result.status == "skipped"
    assert store.audit_log(workflow="document-request")[-1].actor == ACTOR


def test_the_front_page_says_what_a_parked_run_waits_for_and_until_when(
    client: httpx.Client, parked: tuple[str, str]
) -> None:
    _, key = parked
    page = signed_in(client).get("/")
    assert page.status_code == 200
    assert "waits for ctx.approvals.request until" in page.text
    assert key in page.text
