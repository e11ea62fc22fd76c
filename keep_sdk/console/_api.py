"""The JSON API under ``/api``: the command line's ``--json`` models, and its OpenAPI document.

Every call needs ``Authorization: Bearer TOKEN`` (the cookie alone is not enough,
so another site's page cannot make a browser call it). Errors are
``{"error": {"status", "message"}}`` with 400 (bad input), 401 (no or wrong token),
404 (unknown workflow, run, event or cursor) or 409 (the action is refused in
the current state; nothing changed).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from keep_sdk.console import _views as views
from keep_sdk.console._actions import ActionRequest, ActionResult
from keep_sdk.console._queries import EventQuery, FlowQuery, LedgerQuery, RunQuery, StatusQuery
from keep_sdk.console._web import (
    console_of,
    error_message,
    error_status,
    json_error,
    json_model,
    query,
    signed_in,
)
from keep_sdk.contract.durable import NotificationOutcome
from keep_sdk.errors import KeepError
from keep_sdk.status import StatusReport

__all__ = ["API", "openapi_document"]

Handler = Callable[[Request], Awaitable[Response]]


def _guarded(build: Callable[[Request], BaseModel]) -> Handler:
    async def endpoint(request: Request) -> Response:
        if not signed_in(request, api=True):
            return json_error(401, "missing or wrong token: send Authorization: Bearer TOKEN")
        try:
            return json_model(await run_in_threadpool(build, request))
        except (KeepError, ValidationError) as exc:
            return json_error(error_status(exc), error_message(exc))

    return endpoint


def _size(request: Request, limit: int | None) -> int:
    return limit or console_of(request).settings.page_size


def _status(request: Request) -> StatusReport:
    q = query(request, StatusQuery)
    return console_of(request).installation.status(workflow=q.workflow, limit=q.limit)


def _flow(request: Request) -> views.FlowPage:
    q = query(request, FlowQuery)
    store = console_of(request).installation.store
    name = request.path_params["name"]
    return views.flow_page(store, name, before=q.before, limit=_size(request, q.limit))


def _events(request: Request) -> views.EventPage:
    q = query(request, EventQuery)
    if q.workflow is None:
        raise ValidationError.from_exception_data(
            "EventQuery", [{"type": "missing", "loc": ("workflow",), "input": None}]
        )
    store = console_of(request).installation.store
    return views.event_page(
        store,
        q.workflow,
        topic=q.topic,
        status=q.status,
        before=q.before,
        limit=_size(request, q.limit),
    )


def _runs(request: Request) -> views.RunPage:
    q = query(request, RunQuery)
    store = console_of(request).installation.store
    return views.run_page(
        store, workflow=q.workflow, status=q.status, before=q.before, limit=_size(request, q.limit)
    )


def _run(request: Request) -> views.RunView:
    inst = console_of(request).installation
    return views.run_view(inst.store, request.path_params["run_id"], reconcilable=inst.reconcilable)


def _ledger(request: Request) -> views.LedgerPage:
    q = query(request, LedgerQuery)
    store = console_of(request).installation.store
    return views.ledger_page(
        store, workflow=q.workflow, status=q.status, before=q.before, limit=_size(request, q.limit)
    )


async def actions(request: Request) -> Response:
    """``POST /api/actions`` with an `ActionRequest` body: the action's `ActionResult`."""
    console = console_of(request)
    if not signed_in(request, api=True):
        return json_error(401, "missing or wrong token: send Authorization: Bearer TOKEN")
    try:
        body = json.loads(await request.body() or b"null")
        action = ActionRequest.model_validate(body)
        result: ActionResult = await run_in_threadpool(console.actions.perform, action)
    except json.JSONDecodeError as exc:
        return json_error(400, f"the body is not JSON: {exc}")
    except (KeepError, ValidationError) as exc:
        return json_error(error_status(exc), error_message(exc))
    return json_model(result)


async def notify(request: Request) -> Response:
    """``POST /api/notify/{correlation_key}``: deliver a durable operation's result (the JSON
    body) to its parked run, as ``keep notify`` does.

    202 with ``{notification, run}`` when it was applied or kept for a worker; 409 when it
    was recorded as a duplicate or ignored (the operation completed or was cancelled:
    nothing changed); 400 for a malformed key or a body that is not JSON and 404 for an
    unknown key, both before anything is written.
    """
    console = console_of(request)
    if not signed_in(request, api=True):
        return json_error(401, "missing or wrong token: send Authorization: Bearer TOKEN")
    try:
        result = json.loads(await request.body() or b"null")
    except json.JSONDecodeError as exc:
        return json_error(400, f"the body is not JSON: {exc}; send the operation's result")
    try:
        done = await run_in_threadpool(
            console.actions.notify, request.path_params["correlation_key"], result
        )
    except (KeepError, ValidationError) as exc:
        return json_error(error_status(exc), error_message(exc))
    unchanged = (NotificationOutcome.DUPLICATE, NotificationOutcome.IGNORED)
    return json_model(done, 409 if done.notification.outcome in unchanged else 202)


async def openapi(request: Request) -> Response:
    """The OpenAPI document of this API (no token needed: it holds no data)."""
    return json_model(openapi_document())


_MODELS: list[type[BaseModel]] = [
    StatusReport,
    views.FlowPage,
    views.EventPage,
    views.RunPage,
    views.RunView,
    views.LedgerPage,
    ActionRequest,
    ActionResult,
]

_GETS: list[tuple[str, str, type[BaseModel], type[BaseModel] | None, str]] = [
    (
        "/api/status",
        "status",
        StatusReport,
        StatusQuery,
        "the status read model, as `keep status --json` less its commands",
    ),
    ("/api/workflows/{name}/flow", "flow", views.FlowPage, FlowQuery, "inputs → outputs"),
    (
        "/api/events",
        "events",
        views.EventPage,
        EventQuery,
        "a page of the rows of `keep events --json`",
    ),
    ("/api/runs", "runs", views.RunPage, RunQuery, "`keep runs --json`, a page"),
    ("/api/runs/{run_id}", "run", views.RunView, None, "one run and its allowed actions"),
    (
        "/api/ledger",
        "ledger",
        views.LedgerPage,
        LedgerQuery,
        "a page of the rows of `keep ledger --json`",
    ),
]


def _parameters(path: str, model: type[BaseModel] | None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = [
        {"name": part[1:-1], "in": "path", "required": True, "schema": {"type": "string"}}
        for part in path.split("/")
        if part.startswith("{")
    ]
    if model is not None:
        for name, field in model.model_fields.items():
            found.append(
                {
                    "name": name,
                    "in": "query",
                    "required": field.is_required(),
                    "description": model.__doc__ or "",
                    "schema": {
                        "type": "integer" if field.annotation in (int, int | None) else "string"
                    },
                }
            )
    return found


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 for ``/api``, with the pydantic models' JSON Schemas as components."""
    _, schemas = models_json_schema(
        [(m, "serialization") for m in _MODELS],
        by_alias=True,
        ref_template="#/components/schemas/{model}",
    )
    errors = {
        str(code): {"description": text}
        for code, text in (
            (400, "bad input"),
            (401, "missing or wrong token"),
            (404, "unknown workflow, run, event or page cursor"),
            (409, "refused in the current state; nothing changed"),
        )
    }

    def ok(model: type[BaseModel]) -> dict[str, Any]:
        return {
            "description": "OK",
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
            },
        }

    paths: dict[str, Any] = {
        path: {
            "get": {
                "operationId": op,
                "summary": summary,
                "parameters": _parameters(path, q),
                "responses": {"200": ok(model), **errors},
            }
        }
        for path, op, model, q, summary in _GETS
    }
    paths["/api/actions"] = {
        "post": {
            "operationId": "act",
            "summary": "a person's action (grant, resolve, skip-event, pause, resume)",
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/ActionRequest"}}
                },
            },
            "responses": {"200": ok(ActionResult), **errors},
        }
    }
    paths["/api/notify/{correlation_key}"] = {
        "post": {
            "operationId": "notify",
            "summary": "deliver a durable operation's result to its parked run",
            "parameters": _parameters("/api/notify/{correlation_key}", None),
            "responses": {
                "202": {"description": "applied, or kept for a worker to deliver"},
                "409": {"description": "recorded as a duplicate or ignored; nothing changed"},
                **errors,
            },
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "keep console API", "version": "1"},
        "components": {
            "schemas": schemas.get("$defs", {}),
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"token": []}],
        "paths": paths,
    }


API: dict[str, Handler] = {
    "status": _guarded(_status),
    "flow": _guarded(_flow),
    "events": _guarded(_events),
    "runs": _guarded(_runs),
    "run": _guarded(_run),
    "ledger": _guarded(_ledger),
    "actions": actions,
    "notify": notify,
    "openapi": openapi,
}
