"""Seed data for the built-in doubles: the shape each expects, merging, and declared faults.

A seed document maps connector names to their data, plus an optional
``faults`` list::

    {"sheets": {"spreadsheets": {"invoices": {"rows": []}}},
     "faults": [{"connector": "slack", "operation": "postMessage",
                 "kind": "timeout_before_effect"}]}

`SEED_SHAPES` holds the model each built-in double's data must match (checked
before anything runs, so a wrong shape is refused with the path to the bad
value). `merge` combines seed data with what a double already holds: objects
merge key by key, lists keep their items and gain the seed's items that are not
there yet (the same ``id``, ``rowId`` or ``ts``, or an equal value), anything
else is replaced; seeding twice is therefore harmless.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from keep_sdk.connectors.builtin.faults import FaultKind
from keep_sdk.errors import ConfigurationError

__all__ = ["SEED_FAULT_KINDS", "SEED_SHAPES", "Seed", "SeedFault", "merge", "parse_seed"]

_Text = Annotated[str, Field(min_length=1)]
Cell = str | int | float | bool | None


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class _Message(_Shape):
    id: _Text
    from_: str = Field(alias="from")
    subject: str
    body: str
    received_at: str = Field(alias="receivedAt")


class _GmailSeed(_Shape):
    messages: list[_Message] = Field(default_factory=list)
    sent: list[dict[str, Any]] = Field(default_factory=list)


class _Row(_Shape):
    row_id: _Text = Field(alias="rowId")
    values: list[Cell]


class _Sheet(_Shape):
    rows: list[_Row] = Field(default_factory=list)


class _SheetsSeed(_Shape):
    spreadsheets: dict[str, _Sheet] = Field(default_factory=dict)


class _ChatMessage(_Shape):
    ts: _Text
    text: str


class _SlackSeed(_Shape):
    channels: dict[str, list[_ChatMessage]] = Field(default_factory=dict)


class _ApprovalsSeed(_Shape):
    blocked: list[_Text] = Field(default_factory=list)


class _JobsSeed(_Shape):
    pending_polls: int = Field(default=2, ge=0, alias="pendingPolls")
    failing: list[_Text] = Field(default_factory=list)


SEED_SHAPES: dict[str, type[BaseModel]] = {
    "approvals": _ApprovalsSeed,
    "gmail": _GmailSeed,
    "jobs": _JobsSeed,
    "sheets": _SheetsSeed,
    "slack": _SlackSeed,
}
"""The model the seed data of each built-in double must match, by connector name."""

SEED_FAULT_KINDS = (
    FaultKind.TRANSIENT,
    FaultKind.PERMISSION_DENIED,
    FaultKind.FAILURE,
    FaultKind.TIMEOUT_BEFORE_EFFECT,
    FaultKind.TIMEOUT_AFTER_EFFECT,
    FaultKind.SLOW,
)
"""Fault kinds a seed file may declare (the crash kinds kill the process and are for tests)."""


class SeedFault(BaseModel):
    """A fault a seed file declares: the next `times` calls of ``connector.operation`` fail
    as `kind` (every operation of the connector when `operation` is None)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    connector: _Text
    kind: FaultKind
    operation: str | None = None
    times: Annotated[int, Field(ge=1)] = 1
    delay_s: Annotated[float, Field(ge=0, le=60, alias="delayS")] = 0.0

    @field_validator("kind")
    @classmethod
    def _seedable(cls, kind: FaultKind) -> FaultKind:
        if kind not in SEED_FAULT_KINDS:
            allowed = ", ".join(k.value for k in SEED_FAULT_KINDS)
            raise ValueError(f"{kind.value!r} cannot be seeded; choose one of: {allowed}")
        return kind


_IDENTITIES = ("id", "rowId", "ts")


def _identity(item: Any) -> Any:
    if isinstance(item, dict):
        for key in _IDENTITIES:
            if key in item:
                return (key, item[key])
    return ("value", repr(item))


def merge(current: Any, seed: Any) -> Any:
    """`seed` merged into `current` (neither is changed): see the module's rules."""
    if isinstance(current, dict) and isinstance(seed, dict):
        merged = copy.deepcopy(current)
        for key, value in seed.items():
            merged[key] = merge(current[key], value) if key in current else copy.deepcopy(value)
        return merged
    if isinstance(current, list) and isinstance(seed, list):
        seen = {_identity(item) for item in current}
        added = [copy.deepcopy(item) for item in seed if _identity(item) not in seen]
        return copy.deepcopy(current) + added
    return copy.deepcopy(seed)


class Seed(BaseModel):
    """A checked seed document: data by connector name, and the faults to inject."""

    model_config = ConfigDict(frozen=True)

    data: dict[str, dict[str, Any]] = Field(default_factory=dict)
    faults: list[SeedFault] = Field(default_factory=list)


def _where(error: Any) -> str:
    return ".".join(str(part) for part in error["loc"]) or "(top)"


def parse_seed(document: Any, *, doubles: Collection[str], source: str) -> Seed:
    """Check a seed document against `doubles` (the names of the connectors that take seed
    data) and `SEED_SHAPES`; raise `ConfigurationError` naming `source`, the path to the
    first bad value and what was expected."""
    if not isinstance(document, dict):
        raise ConfigurationError(
            f"{source} must map connector names to their data, such as "
            '{"sheets": {"spreadsheets": {"invoices": {"rows": []}}}}'
        )
    data: dict[str, dict[str, Any]] = {}
    for name, value in document.items():
        if name == "faults":
            continue
        if name not in doubles:
            known = ", ".join(sorted(doubles)) or "none"
            raise ConfigurationError(
                f"{source}: {name!r} is not a connector that takes seed data; known: {known}"
            )
        if not isinstance(value, dict):
            raise ConfigurationError(f"{source}: {name} must be an object of its data")
        shape = SEED_SHAPES.get(name)
        if shape is not None:
            try:
                shape.model_validate(value)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise ConfigurationError(
                    f"{source}: {name}.{_where(first)}: {first['msg']}"
                ) from None
        data[name] = value
    try:
        faults = [SeedFault.model_validate(f) for f in _as_list(document.get("faults", []))]
    except (ValidationError, TypeError) as exc:
        detail = (
            f"{_where(exc.errors()[0])}: {exc.errors()[0]['msg']}"
            if isinstance(exc, ValidationError)
            else str(exc)
        )
        raise ConfigurationError(f"{source}: faults: {detail}") from None
    for fault in faults:
        if fault.connector not in doubles:
            raise ConfigurationError(
                f"{source}: faults: {fault.connector!r} is not a built-in double; "
                f"known: {', '.join(sorted(doubles)) or 'none'}"
            )
    return Seed(data=data, faults=faults)


def _as_list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("must be a list of {connector, kind, operation?, times?, delayS?}")
    return value
