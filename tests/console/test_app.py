"""The console over HTTP on a real SQLite store: sign-in, refusals that change nothing, the
person's actions through `PersonActions` (audited), pages and the JSON API."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from keep_sdk.app import Installation
from keep_sdk.conformance.postgres import PostgresServer
from keep_sdk.console import ConsoleSettings, create_app
from keep_sdk.model import LedgerStatus, RunStatus
from keep_sdk.stores import Store
from tests.cli.terminal import keep
from tests.console.server import served
from tests.console.stores import TOKEN, Prepared, opened, prepare

BEARER = {"Authorization": f"Bearer {TOKEN}"}
ACTOR = "console:tester"


@pytest.fixture
def prepared(tmp_path: Path) -> Prepared:
    return prepare(tmp_path)


@pytest.fixture
def app(prepared: Prepared) -> Iterator[Starlette]:
    inst = opened(prepared.url)
    settings = ConsoleSettings(store_url=prepared.url, token=TOKEN, actor=ACTOR)
    try:
        yield create_app(settings, inst)
    finally:
        inst.close()


@pytest.fixture
def client(app: Starlette) -> Iterator[httpx.Client]:
    with served(app) as base, httpx.Client(base_url=base, timeout=60) as http:
        yield http


@pytest.fixture
def store(app: Starlette) -> Store:
    store: Store = app.state.console.installation.store
    return store


def signed_in(client: httpx.Client) -> httpx.Client:
    answer = client.get(f"/login?token={TOKEN}")
    assert answer.status_code == 303
    assert "httponly" in answer.headers["set-cookie"].lower()
    assert "samesite=strict" in answer.headers["set-cookie"].lower()
    return client


def csrf(client: httpx.Client, path: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get(path).text)
    assert found, f"no form with a CSRF field on {path}"
    return found.group(1)


def snapshot(store: Store) -> tuple[object, ...]:
    return (
        [w.model_dump() for w in store.list_workflows()],
        [r.model_dump() for r in store.list_runs()],
        [e.model_dump() for e in store.list_ledger()],
        [a.model_dump() for a in store.audit_log()],
    )


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/runs",
        "/events",
        "/ledger",
        "/workflows/waiting",
        "/api/status",
        "/api/runs",
        "/api/openapi.json",
    ],
)
def test_nothing_is_shown_without_the_token(client: httpx.Client, path: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}):
        answer = client.get(path, headers=headers)
        assert answer.status_code == 401
        assert "waiting" not in answer.text.replace("/workflows/waiting", "")
        assert "Add invoice" not in answer.text


def test_a_wrong_token_does_not_sign_in(client: httpx.Client) -> None:
    answer = client.get("/login?token=not-the-token-at-all")
    assert answer.status_code == 401
    assert "set-cookie" not in answer.headers
    assert client.get("/").status_code == 401


def test_signed_in_pages_show_what_waits(client: httpx.Client, prepared: Prepared) -> None:
    signed_in(client)
    home = client.get("/")
    assert home.status_code == 200
    assert "Add invoice from billing@acme-hosting.example (1,250.00 EUR) to the sheet" in home.text
    run = client.get(f"/runs/{prepared.approval_run}")
    assert "Grant sheets.write" in run.text
    assert "The host stopped the call" in run.text
    assert "ctx.sheets.appendRow needs the permission" in run.text
    assert "Invoice INV-2211 for November" in run.text
    assert "It didn&#39;t happen" not in run.text
    assert "Skip it" not in run.text
    for path in ("/runs", "/ledger", "/events", "/events?workflow=waiting&status=pending"):
        assert client.get(path).status_code == 200, path


def test_a_forged_form_changes_nothing(
    client: httpx.Client, store: Store, prepared: Prepared
) -> None:
    signed_in(client)
    before = snapshot(store)
    form = {"action": "grant", "workflow": "waiting", "permission": "sheets.write"}
    for forged in ({}, {"csrf": "0" * 64}):
        answer = client.post("/actions", data=form | forged)
        assert answer.status_code == 403
        assert "CSRF" in answer.text
    token = csrf(client, "/runs/" + prepared.approval_run)
    client.cookies.clear()
    assert client.post("/actions", data=form | {"csrf": token}).status_code == 401
    client.cookies.set("keep_console", TOKEN)
    assert client.post("/api/actions", json=form).status_code == 401
    assert snapshot(store) == before


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/runs/run_00000000000000000000000000000000", 404),
        ("/workflows/nope", 404),
        ("/events?workflow=waiting&before=evt_unknown", 404),
        ("/runs?status=sleeping", 400),
        ("/ledger?limit=0", 400),
        ("/api/runs/run_unknown", 404),
        ("/api/events", 400),
        ("/api/runs?before=run_unknown", 404),
    ],
)
def test_bad_input_is_a_clear_status(client: httpx.Client, path: str, status: int) -> None:
    signed_in(client)
    answer = client.get(path, headers=BEARER)
    assert answer.status_code == status
    if path.startswith("/api/"):
        assert answer.json()["error"]["status"] == status
        assert answer.json()["error"]["message"]
    else:
        assert "Nothing was changed" in answer.text


def test_grant_through_a_form_continues_the_run_and_is_audited(
    client: httpx.Client, store: Store, prepared: Prepared
) -> None:
    signed_in(client)
    token = csrf(client, f"/runs/{prepared.approval_run}")
    answer = client.post(
        "/actions",
        data={
            "csrf": token,
            "action": "grant",
            "workflow": "waiting",
            "permission": "sheets.write",
        },
    )
    assert answer.status_code == 200, answer.text
    assert "granted sheets.write to waiting" in answer.text
    assert store.get_run(prepared.approval_run).status is RunStatus.COMMITTED
    grants = [e for e in store.audit_log(workflow="waiting") if e.action == "grant"]
    assert grants[-1].actor == ACTOR
    assert "sheets.write" in store.get_workflow("waiting").grants


def test_a_refused_action_is_409_and_changes_nothing(
    client: httpx.Client, store: Store, prepared: Prepared
) -> None:
    before = snapshot(store)
    for body in (
        {"action": "resolve", "run": prepared.approval_run, "choice": "skip"},
        {"action": "grant", "workflow": "waiting", "permission": "sheets.writ"},
        {"action": "skip-event", "event": "evt_unknown"},
    ):
        answer = client.post("/api/actions", json=body, headers=BEARER)
        assert answer.status_code in (404, 409), answer.text
    answer = client.post("/api/actions", json={"action": "grant"}, headers=BEARER)
    assert answer.status_code == 400
    assert "workflow, permission" in answer.json()["error"]["message"]
    assert snapshot(store) == before


def test_resolving_an_escalated_mutation_shows_the_observed_call_first(
    client: httpx.Client, store: Store, prepared: Prepared
) -> None:
    view = client.get(f"/api/runs/{prepared.escalated_run}", headers=BEARER).json()
    assert view["actions"] == ["happened", "didnt-happen", "skip"]
    assert view["mutation"]["operation"] == "slack.postMessage"
    assert view["mutation"]["params"]["channel"] == "#finance"
    page = signed_in(client).get(f"/runs/{prepared.escalated_run}").text
    assert "The host observed the call" in page
    assert "#finance" in page
    assert "ctx.slack.postMessage" in page
    done = client.post(
        "/api/actions",
        json={"action": "resolve", "run": prepared.escalated_run, "choice": "skip"},
        headers=BEARER,
    )
    assert done.status_code == 200, done.text
    assert done.json()["runs"][0]["status"] == "committed"
    entry = store.ledger_entry_for_run(prepared.escalated_run)
    assert entry is not None
    assert entry.resolved_by == ACTOR
    assert entry.status is LedgerStatus.INDETERMINATE
    again = client.post(
        "/api/actions",
        json={"action": "resolve", "run": prepared.escalated_run, "choice": "skip"},
        headers=BEARER,
    )
    assert again.status_code == 409


def test_pause_and_resume(client: httpx.Client, store: Store) -> None:
    for action, paused in (("pause", True), ("resume", False)):
        answer = client.post(
            "/api/actions", json={"action": action, "workflow": "waiting"}, headers=BEARER
        )
        assert answer.status_code == 200, answer.text
        assert store.get_workflow("waiting").paused is paused
    assert [a.actor for a in store.audit_log(workflow="waiting")][-2:] == [ACTOR, ACTOR]


def test_api_pages_follow_the_cursor_through_every_event(
    client: httpx.Client, store: Store
) -> None:
    every = [e.id for e in store.list_events("waiting")][::-1]
    seen: list[str] = []
    cursor: str | None = None
    while True:
        query = {"workflow": "waiting", "limit": 2} | ({"before": cursor} if cursor else {})
        page = client.get("/api/events", params=query, headers=BEARER).json()
        seen += [e["id"] for e in page["items"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == every
    assert len(every) > 2


def test_status_api_is_the_cli_json_less_its_commands(
    client: httpx.Client, prepared: Prepared
) -> None:
    api = client.get("/api/status", headers=BEARER).json()
    cli = json.loads(keep("status", "--store", prepared.url, "--json").out)
    waiting = [item for workflow in cli["workflows"] for item in workflow["waiting"]]
    spelled = [item.pop("commands") for item in waiting]
    assert api == cli
    assert [len(commands) for commands in spelled] == [len(i["remedies"]) for i in waiting]
    assert {"grant", "resolve"} <= {r["kind"] for i in waiting for r in i["remedies"]}
    assert all(c.startswith("keep ") for commands in spelled for c in commands)


def test_the_openapi_document_names_every_api_route(client: httpx.Client, app: Starlette) -> None:
    document = client.get("/api/openapi.json", headers=BEARER).json()
    assert document["openapi"].startswith("3.")
    paths = {getattr(route, "path", "") for route in app.routes}
    api_routes = {p for p in paths if p.startswith("/api/") and p != "/api/openapi.json"}
    assert api_routes == set(document["paths"])
    for path in document["paths"].values():
        for operation in path.values():
            for response in operation["responses"].values():
                for content in response.get("content", {}).values():
                    name = content["schema"]["$ref"].rsplit("/", 1)[1]
                    assert name in document["components"]["schemas"]


def test_a_run_page_shows_the_calls_of_each_phase(
    client: httpx.Client, prepared: Prepared, store: Store
) -> None:
    run = store.get_run(prepared.escalated_run)
    calls = [call for phase in run.trace for call in phase.calls]
    assert calls, "the escalated run recorded no trace"
    page = signed_in(client).get(f"/runs/{run.id}")
    assert page.status_code == 200
    assert "Tool traces" in page.text
    for call in calls:
        assert call.operation in page.text


def _mutate_cell(page: str, operation: str) -> str:
    found = re.search(rf"<td>{re.escape(operation)}</td><td class=\"call-(\w+)\">", page)
    assert found, f"no trace row for {operation}"
    return found.group(1)


def test_a_run_page_shows_what_became_of_each_mutation(
    client: httpx.Client, prepared: Prepared, store: Store
) -> None:
    signed_in(client)
    escalated = client.get(f"/runs/{prepared.escalated_run}").text
    assert _mutate_cell(escalated, "slack.postMessage") == "uncertain"
    assert "requested" not in escalated
    committed = [
        r
        for r in store.list_runs(workflow="escalated", status=RunStatus.COMMITTED)
        if r.handler == "addRow"
        and r.mutation_result is not None
        and r.mutation_result.status == "applied"
    ]
    assert committed, "the escalated workflow committed no row"
    page = client.get(f"/runs/{committed[0].id}").text
    assert _mutate_cell(page, "sheets.appendRow") == "applied"
    assert "rowNumber" in page


def test_a_workflow_page_offers_the_remedies_of_the_status_read_model(
    client: httpx.Client, prepared: Prepared
) -> None:
    signed_in(client)
    escalated = client.get("/workflows/escalated").text
    assert f'name="run" value="{prepared.escalated_run}"' in escalated
    assert "It didn&#39;t happen: make it again" in escalated
    assert "Skip it" in escalated
    assert "Ask again whether it happened" not in escalated
    assert "keep resolve" not in escalated
    waiting = client.get("/workflows/waiting").text
    assert "Grant sheets.write" in waiting
    assert "Skip it" not in waiting


def test_the_front_page_puts_the_action_buttons_in_what_waits(
    client: httpx.Client, prepared: Prepared
) -> None:
    """Issue 31: the "what waits" box offers the buttons, not only words."""
    page = signed_in(client).get("/").text
    assert 'name="permission" value="sheets.write"' in page
    assert "Grant sheets.write" in page
    assert f'name="run" value="{prepared.escalated_run}"' in page
    assert "It happened, with this result" in page
    assert "It didn&#39;t happen: make it again" in page


def test_it_happened_with_a_result_through_a_form(
    client: httpx.Client, store: Store, prepared: Prepared
) -> None:
    token = csrf(signed_in(client), f"/runs/{prepared.escalated_run}")
    form = {"csrf": token, "action": "resolve", "run": prepared.escalated_run}
    bad = client.post("/actions", data=form | {"choice": "happened", "result": "{nope"})
    assert bad.status_code == 400
    assert "not JSON" in bad.text
    missing = client.post("/actions", data=form | {"choice": "happened"})
    assert missing.status_code == 400
    done = client.post(
        "/actions", data=form | {"choice": "happened", "result": '{"ts": "1700.01"}'}
    )
    assert done.status_code == 200, done.text
    run = store.get_run(prepared.escalated_run)
    assert run.status is RunStatus.COMMITTED
    entry = store.ledger_entry_for_run(run.id)
    assert entry is not None
    assert entry.status is LedgerStatus.APPLIED
    assert entry.result == {"ts": "1700.01"}
    assert entry.resolved_by == ACTOR
    page = client.get(f"/runs/{run.id}").text
    assert "happened, with result {&#34;ts&#34;:&#34;1700.01&#34;}" in page


def test_a_run_resolved_as_not_happened_shows_its_resolution_not_a_retry(
    client: httpx.Client, store: Store, prepared: Prepared
) -> None:
    done = client.post(
        "/api/actions",
        json={"action": "resolve", "run": prepared.escalated_run, "choice": "didnt-happen"},
        headers=BEARER,
    )
    assert done.status_code == 200, done.text
    old = store.get_run(prepared.escalated_run)
    assert old.status is RunStatus.FAILED_INTERNAL
    view = client.get(f"/api/runs/{old.id}", headers=BEARER).json()
    assert view["actions"] == []
    assert view["resolution"].startswith(f"resolved by {ACTOR}")
    page = signed_in(client).get(f"/runs/{old.id}").text
    assert '<span class="status resolved">resolved</span>' in page
    assert "failed:internal" not in page
    assert ">Retry<" not in page
    runs = client.get("/runs?workflow=escalated").text
    assert '<span class="status resolved">resolved</span>' in runs


def test_no_page_shows_the_store_password(postgres_server: PostgresServer) -> None:
    url = postgres_server.create_database("keep_console_password")
    scheme, _, rest = url.partition("://")
    user, _, place = rest.partition("@")
    secret_url = f"{scheme}://{user}:n0t-for-eyes@{place}"
    inst = Installation.open(secret_url, isolation="in-process")
    try:
        inst.store.deploy("invoices", "source", {}, handlers=[])
        settings = ConsoleSettings(store_url=secret_url, token=TOKEN, actor=ACTOR)
        app = create_app(settings, inst)
        with served(app) as base, httpx.Client(base_url=base, timeout=60) as http:
            signed_in(http)
            pages = [http.get(path) for path in ("/", "/runs", "/events")]
            api = http.get("/api/status", headers=BEARER)
    finally:
        inst.close()
    for answer in [*pages, api]:
        assert answer.status_code == 200, answer.text
        assert "n0t-for-eyes" not in answer.text
    assert f"{user}:***@" in pages[0].text
    assert api.json()["store"].startswith(f"{scheme}://{user}:***@")
