"""``[connectors.<name>] type = "sql"``: named statements over a SQLAlchemy database URL."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator, model_validator
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from keep_sdk.connectors._settings import (
    OperationSettings,
    Settings,
    check_operation_name,
    resolve_path,
)
from keep_sdk.connectors.secrets import Secret
from keep_sdk.model import OperationKind

__all__ = ["IDEMPOTENCY_PARAM", "SqlLookup", "SqlOperation", "SqlSettings", "bind_names"]

IDEMPOTENCY_PARAM = "idempotency_key"
_BIND = re.compile(r"(?<![:\w]):([A-Za-z_][A-Za-z0-9_]*)")
_QUOTED = re.compile(r"'(?:[^']|'')*'")


def bind_names(sql: str) -> set[str]:
    """The ``:name`` bound parameters of `sql` (outside string literals, not ``::casts``)."""
    return set(_BIND.findall(_QUOTED.sub("''", sql)))


class SqlLookup(Settings):
    """A key-lookup query used only to reconcile: ``[connectors.<name>.lookups.<lookup>]``.

    It receives the mutation's arguments and ``:idempotency_key``; a row means the
    mutation happened (the row is its result), no row that it did not.
    """

    sql: str = Field(min_length=1, description="SELECT with bound parameters only.")


class SqlOperation(OperationSettings):
    """One named statement: ``[connectors.<name>.operations.<op>]``."""

    sql: str = Field(
        min_length=1,
        description="The statement; values only as bound parameters (:name) from the arguments "
        "(and :idempotency_key in mutations).",
    )
    reconcile: str | None = Field(
        default=None, description="Mutations only: the name of a lookup under lookups.<name>."
    )

    @model_validator(mode="after")
    def _consistent(self) -> SqlOperation:
        properties = set(self.arguments.get("properties", {}))
        mutation = self.kind is OperationKind.MUTATION
        allowed = properties | ({IDEMPOTENCY_PARAM} if mutation else set())
        for name in sorted(bind_names(self.sql) - allowed):
            raise ValueError(
                f"the statement uses :{name}, which is not an argument; add {name!r} to "
                "arguments.properties"
                + (" (only mutations get :idempotency_key)" if name == IDEMPOTENCY_PARAM else "")
            )
        optional = (bind_names(self.sql) & properties) - self.required_arguments()
        for name in sorted(optional):
            raise ValueError(
                f"the statement uses :{name}; a bound argument must be required: add {name!r} "
                "to arguments.required"
            )
        if self.reconcile is not None and self.kind is not OperationKind.MUTATION:
            raise ValueError("only mutations reconcile; remove `reconcile` from this read")
        return self


class SqlSettings(Settings):
    """A database reached through SQLAlchemy, with the statements scripts may run by name."""

    url: str | Secret = Field(
        description="SQLAlchemy URL; a password as a reference: "
        '"postgresql+psycopg://app:${DB_PASSWORD}@host/db"; a SQLite file '
        '("sqlite:///orders.db") is relative to keep.toml\'s folder.'
    )
    description: str = Field(default="", description="Shown by `keep connectors`.")
    max_concurrency: int = Field(default=4, ge=1, description="Most statements at once.")
    timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="Seconds one call may take in all: connecting, the statement and fetching "
        "its rows (PostgreSQL: statement_timeout; SQLite: the statement is interrupted).",
    )
    max_result_rows: int = Field(
        default=10_000, ge=1, description="Most rows a read returns; more fails the call."
    )
    max_result_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=1024,
        le=256 * 1024 * 1024,
        description="Most bytes of a result (its rows as JSON), counted while fetching; more "
        "fails the call.",
    )
    rate_limit_per_s: float | None = Field(
        default=None, gt=0, description="Most statements started per second (none: unlimited)."
    )
    operations: dict[str, SqlOperation] = Field(description="Named statements, by JS name.")
    lookups: dict[str, SqlLookup] = Field(
        default_factory=dict, description="Key-lookup queries mutations reconcile with."
    )

    @field_validator("operations")
    @classmethod
    def _names(cls, value: dict[str, SqlOperation]) -> dict[str, SqlOperation]:
        for name in value:
            check_operation_name(name)
        if not value:
            raise ValueError("declare at least one statement under operations.<name>")
        return value

    @model_validator(mode="after")
    def _lookups(self) -> SqlSettings:
        for op_name, op in self.operations.items():
            if op.reconcile is None:
                continue
            lookup = self.lookups.get(op.reconcile)
            if lookup is None:
                known = ", ".join(sorted(self.lookups)) or "none"
                raise ValueError(
                    f"operations.{op_name}.reconcile names the lookup {op.reconcile!r}, which "
                    f"is not declared under lookups (declared: {known})"
                )
            allowed = set(op.required_arguments()) | {IDEMPOTENCY_PARAM}
            for name in sorted(bind_names(lookup.sql) - allowed):
                raise ValueError(
                    f"lookups.{op.reconcile} uses :{name}; it may use :idempotency_key and the "
                    f"required arguments of {op_name}"
                )
        return self

    def resolved_against(self, folder: Path) -> SqlSettings:
        """These settings as keep.toml in `folder` means them: the file of a SQLite `url`
        (``sqlite:///orders.db``) resolved against `folder`; other URLs unchanged."""
        text = self.revealed_url()
        resolved = _sqlite_against(text, folder)
        if resolved == text:
            return self
        url: str | Secret = (
            Secret(resolved, source=self.url.source, parts=self.url.parts)
            if isinstance(self.url, Secret)
            else resolved
        )
        return self.model_copy(update={"url": url})

    def revealed_url(self) -> str:
        """The URL with its secret filled in, for the engine only."""
        return self.url.reveal() if isinstance(self.url, Secret) else self.url


def _sqlite_against(text: str, folder: Path) -> str:
    try:
        url = make_url(text)
    except ArgumentError:
        return text
    database = url.database
    if (
        url.get_backend_name() != "sqlite"
        or not database
        or database == ":memory:"
        or database.startswith("file:")
    ):
        return text
    resolved = resolve_path(database, folder)
    if resolved == database:
        return text
    return url.set(database=resolved).render_as_string(hide_password=False)
