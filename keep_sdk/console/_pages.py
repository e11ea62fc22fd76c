"""The HTML pages: workflows, inputs → outputs, runs, the ledger, events; actions as forms.

Pages read through `keep_sdk.console._views`; every string from a script or an
external system reaches the page through Jinja2 autoescaping, never as markup.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from keep_sdk.console import _views as views
from keep_sdk.console._actions import ActionRequest
from keep_sdk.console._overview import overview
from keep_sdk.console._queries import EventQuery, FlowQuery, LedgerQuery, RunQuery
from keep_sdk.console._security import COOKIE
from keep_sdk.console._web import (
    console_of,
    error_message,
    error_status,
    html_error,
    query,
    signed_in,
)
from keep_sdk.errors import KeepError, NotFound
from keep_sdk.model import EventStatus, LedgerStatus, RunStatus
from keep_sdk.status import WorkflowStatus
from keep_sdk.stores import redacted_url

__all__ = ["PAGES"]


def _render(request: Request, template: str, **context: Any) -> Response:
    console = console_of(request)
    context |= {
        "csrf": console.guard.csrf,
        "signed_in": True,
        "store": redacted_url(console.installation.store_url),
        "actor": console.settings.actor,
    }
    return console.templates.TemplateResponse(request, template, context)


def _link(request: Request, **changes: str | None) -> str:
    """This page's URL with `changes` to its query (None removes a key)."""
    params = {k: v for k, v in request.query_params.items() if v != ""}
    for key, value in changes.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = value
    return f"{request.url.path}?{urlencode(params)}" if params else request.url.path


async def _page(request: Request, template: str, build: Any, **context: Any) -> Response:
    if not signed_in(request):
        return _login(request, status_code=401)
    try:
        data = await run_in_threadpool(build)
    except (KeepError, ValidationError) as exc:
        return html_error(request, error_status(exc), error_message(exc))
    nxt = getattr(data, "next", None)
    return _render(
        request,
        template,
        data=data,
        next_link=_link(request, before=nxt) if nxt else None,
        first_link=_link(request, before=None) if request.query_params.get("before") else None,
        **context,
    )


def _login(request: Request, *, status_code: int = 200, wrong: bool = False) -> Response:
    console = console_of(request)
    return console.templates.TemplateResponse(
        request,
        "login.html",
        {"wrong": wrong, "csrf": None, "signed_in": False},
        status_code=status_code,
    )


async def login(request: Request) -> Response:
    """``/login?token=…``: set the token cookie and go to the workflows; a wrong token is 401."""
    console = console_of(request)
    given = request.query_params.get("token")
    if given is None:
        return _login(request)
    if not console.guard.token_ok(given):
        return _login(request, status_code=401, wrong=True)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, given, httponly=True, samesite="strict", path="/")
    return response


async def workflows(request: Request) -> Response:
    inst = console_of(request).installation
    return await _page(
        request,
        "workflows.html",
        lambda: overview(inst.store, now=inst.runtime.now(), reconcilable=inst.reconcilable),
    )


async def workflow(request: Request) -> Response:
    console = console_of(request)
    inst = console.installation
    name = request.path_params["name"]

    def build() -> views.FlowPage:
        q = query(request, FlowQuery)
        return views.flow_page(
            inst.store, name, before=q.before, limit=q.limit or console.settings.page_size
        )

    def summary() -> WorkflowStatus | None:
        try:
            [found] = inst.status(workflow=name, limit=1).workflows
        except NotFound:
            return None
        return found

    return await _page(
        request, "workflow.html", build, name=name, status=await run_in_threadpool(summary)
    )


async def events(request: Request) -> Response:
    console = console_of(request)
    store = console.installation.store

    def build() -> views.EventPage:
        q = query(request, EventQuery)
        names = [w.name for w in store.list_workflows()]
        chosen = q.workflow or (names[0] if names else None)
        if chosen is None:
            return views.EventPage(items=[])
        return views.event_page(
            store,
            chosen,
            topic=q.topic,
            status=q.status,
            before=q.before,
            limit=q.limit or console.settings.page_size,
        )

    names = await run_in_threadpool(lambda: [w.name for w in store.list_workflows()])
    return await _page(
        request,
        "events.html",
        build,
        workflows=names,
        chosen=request.query_params.get("workflow") or (names[0] if names else ""),
        statuses=[s.value for s in EventStatus],
        filters=dict(request.query_params),
    )


async def runs(request: Request) -> Response:
    console = console_of(request)

    def build() -> views.RunPage:
        q = query(request, RunQuery)
        return views.run_page(
            console.installation.store,
            workflow=q.workflow,
            status=q.status,
            before=q.before,
            limit=q.limit or console.settings.page_size,
        )

    return await _page(
        request,
        "runs.html",
        build,
        statuses=[s.value for s in RunStatus],
        filters=dict(request.query_params),
    )


async def run(request: Request) -> Response:
    inst = console_of(request).installation
    run_id = request.path_params["run_id"]
    return await _page(
        request,
        "run.html",
        lambda: views.run_view(inst.store, run_id, reconcilable=inst.reconcilable),
    )


async def ledger(request: Request) -> Response:
    console = console_of(request)

    def build() -> views.LedgerPage:
        q = query(request, LedgerQuery)
        return views.ledger_page(
            console.installation.store,
            workflow=q.workflow,
            status=q.status,
            before=q.before,
            limit=q.limit or console.settings.page_size,
        )

    return await _page(
        request,
        "ledger.html",
        build,
        statuses=[s.value for s in LedgerStatus],
        filters=dict(request.query_params),
    )


async def act(request: Request) -> Response:
    """A form's action: the token cookie and the form's CSRF value first, then the action
    through `PersonActions`. Refused or bad input: an error with nothing changed."""
    console = console_of(request)
    if not signed_in(request):
        return html_error(request, 401, "sign in first: open the link `keep serve` printed")
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str) and v != ""}
    if not console.guard.csrf_ok(fields.pop("csrf", None)):
        return html_error(
            request,
            403,
            "this form did not come from this console (CSRF check failed); "
            "reload the page and try again",
        )
    try:
        action = ActionRequest.model_validate(fields)
        result = await run_in_threadpool(console.actions.perform, action)
    except (KeepError, ValidationError) as exc:
        return html_error(request, error_status(exc), error_message(exc))
    name = "flash.html" if request.headers.get("hx-request") else "done.html"
    return console.templates.TemplateResponse(
        request,
        name,
        {"ok": True, "message": result.message, "result": result, "csrf": None, "signed_in": True},
    )


PAGES = {
    "login": login,
    "workflows": workflows,
    "workflow": workflow,
    "events": events,
    "runs": runs,
    "run": run,
    "ledger": ledger,
    "act": act,
}
