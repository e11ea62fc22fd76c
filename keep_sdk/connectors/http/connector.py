"""The HTTP connector: configured operations sent with httpx, answers classified.

| what happened | read | mutation |
|---|---|---|
| could not connect (nothing sent) | retried, then `TransientError` | `TransientError` |
| 401 (the token) | `PreconditionFailed` | `PreconditionFailed` |
| 403 | `PermissionDenied` | `PermissionDenied` |
| 408 / 429 / 5xx | retried (Retry-After), then `TransientError` | `TransientError` |
| other 4xx | `PreconditionFailed` | `PreconditionFailed` |
| timeout or broken connection once sent | retried, then `TransientError` | `UncertainOutcome` |

Mutations are sent once with an ``Idempotency-Key`` header and never retried
here: the host's ledger decides, after reconciling by the configured GET.
"""

from __future__ import annotations

import email.utils
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urljoin, urlsplit

import httpx
from pydantic import JsonValue

from keep_sdk.connectors._limits import CallLimits
from keep_sdk.connectors.configured import ConfiguredConnector
from keep_sdk.connectors.http._reading import (
    ACCEPT_ENCODING,
    BodyTooLarge,
    DeadlinePassed,
    UnknownEncoding,
    read_bounded,
)
from keep_sdk.connectors.http._settings import IDEMPOTENCY_KEY, HttpSettings, path_parameters
from keep_sdk.connectors.secrets import Redactor, Secret, secrets_in
from keep_sdk.errors import (
    InvalidArguments,
    PermissionDenied,
    PreconditionFailed,
    TransientError,
    UncertainOutcome,
)
from keep_sdk.model import OperationKind, ReconcileOutcome, ReconcileStatus

if TYPE_CHECKING:
    from keep_sdk.connectors.base import Connector

__all__ = ["HttpConnector", "build", "retry_after_seconds"]

_TRANSIENT_STATUS = frozenset({408, 429})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_DETAIL_CHARS = 200
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 3


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _segment(connector: str, op: str, name: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidArguments(
            f"invalid arguments of ctx.{connector}.{op}:\n  `{name}` fills a URL path "
            f"segment and must be a string or an integer (got {type(value).__name__})",
            problems=[f"`{name}` must be a string or an integer"],
        )
    text = str(value)
    if text in ("", ".", ".."):
        raise InvalidArguments(
            f"invalid arguments of ctx.{connector}.{op}:\n  `{name}` fills a URL path "
            f"segment and must not be empty, '.' or '..' (got {text!r})",
            problems=[f"`{name}` must not be empty, '.' or '..'"],
        )
    return quote(text, safe="")


def _fill(template: str, values: dict[str, Any], *, connector: str, op: str) -> str:
    path = template
    for name in path_parameters(template):
        path = path.replace("{" + name + "}", _segment(connector, op, name, values[name]))
    return path


@dataclass(frozen=True)
class _Answer:
    """A response read within the call's bounds: its status, headers and decoded body."""

    status_code: int
    headers: httpx.Headers
    content: bytes
    url: str = ""

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


def _body(response: _Answer) -> JsonValue:
    if not response.content:
        return None
    try:
        return json.loads(response.content)  # type: ignore[no-any-return]
    except (ValueError, RecursionError):
        return response.text


def _detail(response: _Answer, redact: Redactor) -> str:
    text = redact(" ".join(response.text[: _DETAIL_CHARS * 20].split()))
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."


class HttpConnector(ConfiguredConnector):
    """An HTTP API whose operations are declared in ``keep.toml`` (see docs/connectors-http.md)."""

    settings: HttpSettings

    def __init__(self, settings: HttpSettings, *, transport: httpx.BaseTransport | None = None):
        self.settings = settings
        self.limits = CallLimits(
            rate_per_s=settings.rate_limit_per_s, max_concurrency=settings.max_concurrency
        )
        headers = {
            "Accept-Encoding": ACCEPT_ENCODING,
            **{
                key: value.reveal() if isinstance(value, Secret) else value
                for key, value in settings.headers.items()
            },
        }
        base = urlsplit(settings.base_url)
        self._origin = (base.scheme, base.netloc)
        self._client = httpx.Client(
            base_url=settings.base_url,
            headers=headers,
            timeout=httpx.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
            limits=httpx.Limits(max_connections=settings.max_concurrency),
            follow_redirects=False,
            transport=transport,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def call_operation(
        self, js_name: str, arguments: dict[str, JsonValue], *, idempotency_key: str | None
    ) -> JsonValue:
        """Send the request of `js_name` and classify the answer (module docstring)."""
        op = self.settings.operations[js_name]
        what = f"ctx.{self.name}.{js_name}"
        path = _fill(op.path, arguments, connector=self.name, op=js_name)
        rest = {k: v for k, v in arguments.items() if k not in path_parameters(op.path)}
        request: dict[str, Any] = {"json": rest} if op.method in _BODY_METHODS else {}
        if op.method not in _BODY_METHODS and rest:
            request["params"] = {
                k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in rest.items()
            }
        deadline = time.monotonic() + self.settings.timeout_s
        if op.kind is OperationKind.MUTATION:
            request["headers"] = {"Idempotency-Key": idempotency_key or ""}
            response = self._send(op.method, path, what, True, request, deadline)
            return self._classified(response, what, js_name)
        attempt = 0
        while True:
            try:
                response = self._send(op.method, path, what, False, request, deadline)
                return self._classified(response, what, js_name)
            except TransientError as exc:
                attempt += 1
                wait = exc.retry_after if exc.retry_after is not None else 0.05 * 2**attempt
                if (
                    attempt > self.settings.read_retries
                    or wait > self.settings.max_retry_after_s
                    or time.monotonic() + wait >= deadline
                ):
                    raise
                time.sleep(wait)

    def reconcile_operation(
        self, js_name: str, arguments: dict[str, JsonValue], idempotency_key: str
    ) -> ReconcileOutcome:
        """GET the configured reconcile path: 200 applied, 404 not applied, else retry later."""
        op = self.settings.operations[js_name]
        assert op.reconcile is not None
        what = f"reconcile of ctx.{self.name}.{js_name}"
        values = {**arguments, IDEMPOTENCY_KEY: idempotency_key}
        path = _fill(op.reconcile.path, values, connector=self.name, op=js_name)
        deadline = time.monotonic() + self.settings.timeout_s
        response = self._send("GET", path, what, False, {}, deadline)
        if response.status_code == 200:
            return ReconcileOutcome(status=ReconcileStatus.APPLIED, result=_body(response))
        if response.status_code == 404:
            return ReconcileOutcome(
                status=ReconcileStatus.FAILED, detail=f"{what}: the service has no such call"
            )
        return ReconcileOutcome(
            status=ReconcileStatus.RETRY,
            detail=f"{what} answered {response.status_code}: {_detail(response, self.redact)}",
        )

    def _send(
        self,
        method: str,
        path: str,
        what: str,
        mutation: bool,
        request: dict[str, Any],
        deadline: float,
    ) -> _Answer:
        """Send one request and read its answer within the byte cap and `deadline`;
        follow a read's redirects that stay on the configured origin."""
        with self.limits.slot():
            target = path
            for _ in range(_MAX_REDIRECTS + 1):
                answer = self._send_once(method, target, what, mutation, request, deadline)
                location = answer.headers.get("Location")
                if mutation or answer.status_code not in _REDIRECTS or not location:
                    return answer
                absolute = urljoin(answer.url, location)
                moved = urlsplit(absolute)
                if (moved.scheme, moved.netloc) != self._origin:
                    raise PreconditionFailed(
                        f"{what} was redirected to another origin "
                        f"({moved.scheme}://{moved.netloc}); keep sends requests only to "
                        f"{self.settings.base_url}: fix base_url or path"
                    )
                target = absolute
                if answer.status_code == 303:
                    method, request = "GET", {}
            return answer

    def _send_once(
        self,
        method: str,
        path: str,
        what: str,
        mutation: bool,
        request: dict[str, Any],
        deadline: float,
    ) -> _Answer:
        where = f"{self.settings.base_url}{path.split('?')[0]}"
        left = deadline - time.monotonic()
        limit = self.settings.timeout_s
        if left <= 0:
            raise TransientError(f"{what}: no answer from {where} within {limit:g}s")
        timeout = httpx.Timeout(left, connect=min(left, self.settings.connect_timeout_s))
        try:
            built = self._client.build_request(method, path, timeout=timeout, **request)
            response = self._client.send(built, stream=True)
            content = read_bounded(
                response, max_bytes=self.settings.max_response_bytes, deadline=deadline
            )
            return _Answer(response.status_code, response.headers, content, str(response.url))
        except BodyTooLarge:
            raise PreconditionFailed(
                f"{what}: the answer from {where} is larger than max_response_bytes "
                f"({self.settings.max_response_bytes} bytes, decoded) and was not read "
                "further; ask for less or raise max_response_bytes in keep.toml"
            ) from None
        except UnknownEncoding as exc:
            raise PreconditionFailed(
                f"{what}: the answer from {where} uses content encoding {exc}, which keep "
                f"does not decode (it asks for {ACCEPT_ENCODING})"
            ) from None
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise TransientError(
                f"{what}: cannot connect to {where} ({type(exc).__name__}: {exc}); "
                "nothing was sent. Check that the service runs and base_url is right"
            ) from None
        except (httpx.TimeoutException, DeadlinePassed) as exc:
            if mutation:
                raise UncertainOutcome(
                    f"{what}: no complete answer from {where} within {limit:g}s "
                    f"after the request was sent ({type(exc).__name__}); it may have "
                    "taken effect"
                ) from None
            raise TransientError(
                f"{what}: no complete answer from {where} within {limit:g}s"
            ) from None
        except httpx.TransportError as exc:
            if mutation:
                raise UncertainOutcome(
                    f"{what}: the connection to {where} broke after the request was sent "
                    f"({type(exc).__name__}: {exc}); it may have taken effect"
                ) from None
            raise TransientError(
                f"{what}: the connection to {where} broke ({type(exc).__name__}: {exc})"
            ) from None

    def _classified(self, response: _Answer, what: str, js_name: str) -> JsonValue:
        status = response.status_code
        if 200 <= status < 300:
            return _body(response)
        said = f"{what} answered {status}: {_detail(response, self.redact)}"
        if status == 401:
            raise PreconditionFailed(
                f"{said}; the service refused the token of connector {self.name!r} (wrong, "
                "expired or missing), so nothing happened and no permission grant helps: fix "
                "the token in keep.toml (or the secret it references), then retry the run"
            )
        if status == 403:
            declared = self.operation(js_name)
            raise PermissionDenied(
                f"{said}; the credentials of connector {self.name!r} are refused or lack a "
                "permission: fix them in keep.toml (or the secret they reference)",
                permission=declared.permission,
            )
        if status in _TRANSIENT_STATUS or status >= 500:
            raise TransientError(
                said, retry_after=retry_after_seconds(response.headers.get("Retry-After"))
            )
        if 300 <= status < 400:
            raise PreconditionFailed(
                f"{said}; redirects are followed only within {self.settings.base_url} "
                f"(at most {_MAX_REDIRECTS}): fix base_url or path"
            )
        raise PreconditionFailed(said)


def build(name: str, settings: HttpSettings) -> Connector:
    """The `HttpConnector` instance `name` with the operations of `settings`."""
    specs = [
        op.spec(name, op_name, reconcilable=op.reconcile is not None)
        for op_name, op in sorted(settings.operations.items())
    ]
    cls = HttpConnector.define(
        name,
        specs,
        description=settings.description or f"HTTP API at {settings.base_url}",
        secrets=secrets_in(settings),
    )
    return cls(settings)
