"""Request plumbing shared by the pages and the API: auth, query parsing, errors."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from keep_sdk.console._console import Console
from keep_sdk.console._security import COOKIE
from keep_sdk.errors import ActionRefused, KeepError, NotFound, StoreConflict

__all__ = [
    "console_of",
    "error_message",
    "error_status",
    "html_error",
    "json_error",
    "json_model",
    "query",
    "signed_in",
]

Q = TypeVar("Q", bound=BaseModel)


def console_of(request: Request) -> Console:
    """The `Console` the app was built with."""
    console: Console = request.app.state.console
    return console


def signed_in(request: Request, *, api: bool = False) -> bool:
    """Whether the request carries the token: the bearer header, or (pages) the cookie."""
    guard = console_of(request).guard
    if guard.bearer_ok(request.headers.get("authorization")):
        return True
    return not api and guard.token_ok(request.cookies.get(COOKIE))


def query(request: Request, model: type[Q]) -> Q:
    """The query string as `model` (empty values dropped); `ValidationError` when bad."""
    return model.model_validate({k: v for k, v in request.query_params.items() if v != ""})


def error_status(exc: Exception) -> int:
    """The HTTP status of an error: 404 unknown, 409 refused or conflicting, 400 bad input."""
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, ActionRefused | StoreConflict):
        return 409
    return 400


def error_message(exc: Exception) -> str:
    """One readable message: pydantic's errors listed by field, else the error's text."""
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
        )
    if isinstance(exc, KeepError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def json_model(value: BaseModel | Any, status_code: int = 200) -> Response:
    """A pydantic model as camelCase JSON (the ``--json`` form)."""
    body = (
        value.model_dump_json(by_alias=True)
        if isinstance(value, BaseModel)
        else JSONResponse(value).body
    )
    return Response(body, status_code=status_code, media_type="application/json")


def json_error(status: int, message: str) -> Response:
    """``{"error": {"status": …, "message": …}}``."""
    return JSONResponse({"error": {"status": status, "message": message}}, status_code=status)


def html_error(request: Request, status: int, message: str) -> Response:
    """The error page (or, for an htmx request, the flash fragment) with `status`."""
    console = console_of(request)
    name = "flash.html" if request.headers.get("hx-request") else "error.html"
    return console.templates.TemplateResponse(
        request,
        name,
        {"status": status, "message": message, "ok": False, "csrf": None, "signed_in": True},
        status_code=status,
    )
