"""The web console: what came in, what went out, what waits for a person, and their actions.

``keep serve`` runs it: a Starlette app (served by uvicorn) with server-rendered
Jinja2 pages, htmx served from the package, live updates over server-sent
events, and a JSON API under ``/api`` with the command line's ``--json`` models.
Every request carries the console's token; actions go through
`keep_sdk.runtime.PersonActions`, audited under the console's actor.
"""

from keep_sdk.console._actions import ActionRequest, ActionResult
from keep_sdk.console._api import openapi_document
from keep_sdk.console._app import create_app, serve
from keep_sdk.console._settings import (
    ConsoleSettings,
    check_bind,
    is_loopback,
    new_token,
    stored_token,
)
from keep_sdk.console._views import FlowPage, FlowRow, MutationView, RunView, run_actions

__all__ = [
    "ActionRequest",
    "ActionResult",
    "ConsoleSettings",
    "FlowPage",
    "FlowRow",
    "MutationView",
    "RunView",
    "check_bind",
    "create_app",
    "is_loopback",
    "new_token",
    "openapi_document",
    "run_actions",
    "serve",
    "stored_token",
]
