"""``[connectors.<name>] type = "http"``: the settings of an HTTP API connector."""

from __future__ import annotations

import functools
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from keep_sdk.connectors._settings import OperationSettings, Settings, check_operation_name
from keep_sdk.connectors.secrets import Secret
from keep_sdk.model import OperationKind

__all__ = ["HttpOperation", "HttpReconcile", "HttpSettings", "path_parameters"]

_PARAM = re.compile(r"\{([^{}]*)\}")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
IDEMPOTENCY_KEY = "idempotencyKey"
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key", "x-auth-token"}
)
"""Headers whose value must be a secret reference, never written out in keep.toml."""


def path_parameters(template: str) -> list[str]:
    """The ``{name}`` placeholders of a path template; ``ValueError`` on a malformed one."""
    return list(_parameters(template))


@functools.lru_cache(maxsize=512)
def _parameters(template: str) -> tuple[str, ...]:
    names = tuple(_PARAM.findall(template))
    for name in names:
        if not _IDENT.match(name):
            raise ValueError(f"path {template!r} has a placeholder {{{name}}}; use {{argument}}")
    if "{" in _PARAM.sub("", template) or "}" in _PARAM.sub("", template):
        raise ValueError(f"path {template!r} has an unbalanced brace")
    return names


def _check_path(template: str) -> str:
    if not template.startswith("/"):
        raise ValueError(f"path {template!r} must start with '/' (it is joined to base_url)")
    path_parameters(template)
    return template


class HttpReconcile(Settings):
    """How to ask whether a mutation with a given idempotency key happened: a GET.

    200 means it happened (the JSON body is the mutation's result), 404 that it
    did not; any other answer means "cannot tell yet" and is asked again later.
    """

    path: str = Field(
        description="GET path template; may use the mutation's arguments and {idempotencyKey}."
    )

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return _check_path(value)


class HttpOperation(OperationSettings):
    """One operation of an HTTP connector: ``[connectors.<name>.operations.<op>]``."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = Field(
        default="GET", description="HTTP method."
    )
    path: str = Field(
        description="Path template joined to base_url; {arg} placeholders take required "
        "string or integer arguments, percent-encoded as one path segment."
    )
    reconcile: HttpReconcile | None = Field(
        default=None, description="Mutations only: the GET that looks the idempotency key up."
    )

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return _check_path(value)

    @model_validator(mode="after")
    def _consistent(self) -> HttpOperation:
        required = self.required_arguments()
        properties = set(self.arguments.get("properties", {}))
        for name in path_parameters(self.path):
            if name not in required:
                raise ValueError(
                    f"path placeholder {{{name}}} must be a required argument: add "
                    f'"{name}" to arguments.properties and arguments.required'
                )
        if self.kind is OperationKind.MUTATION:
            if self.method == "GET":
                raise ValueError('a mutation must not use GET; use method = "POST" (or PUT, ...)')
        elif self.reconcile is not None:
            raise ValueError("only mutations reconcile; remove `reconcile` from this read")
        if self.reconcile is not None:
            for name in path_parameters(self.reconcile.path):
                if name != IDEMPOTENCY_KEY and name not in required:
                    raise ValueError(
                        f"reconcile path placeholder {{{name}}} must be {{{IDEMPOTENCY_KEY}}} "
                        f"or a required argument (known: {', '.join(sorted(properties)) or 'none'})"
                    )
        return self


class HttpSettings(Settings):
    """An HTTP API as a connector: where it is, how to authenticate, its limits, its operations."""

    base_url: str = Field(
        pattern=r"^https?://[^/\s]+", description="Scheme and host (and optional base path)."
    )
    description: str = Field(default="", description="Shown by `keep connectors`.")
    headers: dict[str, str | Secret] = Field(
        default_factory=dict,
        description='Sent with every request; credentials as references: "Bearer ${TOKEN}".',
    )
    timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds one call may take in all: connect, headers and the whole body "
        "(with a read's retries).",
    )
    max_response_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=1024,
        le=256 * 1024 * 1024,
        description="Most bytes of an answer's body, counted while reading and after "
        "decompression; a larger answer fails the call.",
    )
    connect_timeout_s: float = Field(default=5.0, gt=0, description="Seconds to connect.")
    rate_limit_per_s: float | None = Field(
        default=None, gt=0, description="Most requests started per second (none: unlimited)."
    )
    max_concurrency: int = Field(default=4, ge=1, description="Most requests in flight at once.")
    read_retries: int = Field(
        default=2, ge=0, le=10, description="Extra attempts of a read after a transient failure."
    )
    max_retry_after_s: float = Field(
        default=5.0, ge=0, description="Longest Retry-After a read waits for in place."
    )
    operations: dict[str, HttpOperation] = Field(
        description="The operations scripts may call, by JS name."
    )

    @field_validator("operations")
    @classmethod
    def _names(cls, value: dict[str, HttpOperation]) -> dict[str, HttpOperation]:
        for name in value:
            check_operation_name(name)
        if not value:
            raise ValueError("declare at least one operation under operations.<name>")
        return value

    @field_validator("headers")
    @classmethod
    def _credentials(cls, value: dict[str, str | Secret]) -> dict[str, str | Secret]:
        for name, header in value.items():
            if name.lower() in CREDENTIAL_HEADERS and not isinstance(header, Secret):
                raise PydanticCustomError(
                    "secret_inlined",
                    f"the header {name} carries a credential, which must not be written in "
                    'the configuration; write a reference such as "Bearer ${ENV_VAR}" or '
                    '"${file:NAME}"',
                )
        return value

    @field_validator("base_url")
    @classmethod
    def _base(cls, value: str) -> str:
        return value.rstrip("/")
