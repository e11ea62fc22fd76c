"""Settings shared by connectors whose operations are declared in ``keep.toml``."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from keep_sdk.connectors.configured import (
    OperationSpec,
    check_arguments_schema,
    check_result_schema,
)
from keep_sdk.model import OperationKind

__all__ = [
    "OperationSettings",
    "Settings",
    "check_operation_name",
    "permission_for",
    "resolve_path",
]

_JS_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")


class Settings(BaseModel):
    """Base of connector settings: unknown keys are refused (a misspelt key never passes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class OperationSettings(Settings):
    """The part of an operation every configured connector type shares."""

    kind: OperationKind = Field(description="read, read_by_id or mutation.")
    permission: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_.-]+$",
        description="What a workflow must be granted; default <connector>.read / .write.",
    )
    description: str = Field(default="", description="Shown by `keep connectors`.")
    arguments: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the argument object (additionalProperties false by default).",
    )

    result: dict[str, Any] | None = Field(
        default=None,
        description="JSON Schema of what the operation returns; `keep connectors` shows it "
        "and the validator checks the fields scripts read from it. Default: not declared.",
    )

    @field_validator("arguments")
    @classmethod
    def _schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_arguments_schema(value)

    @field_validator("result")
    @classmethod
    def _result_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else check_result_schema(value)

    def required_arguments(self) -> set[str]:
        """Names the schema requires."""
        return set(self.arguments.get("required", []))

    def spec(self, connector: str, name: str, *, reconcilable: bool) -> OperationSpec:
        """This operation as `ConfiguredConnector.define` takes it."""
        return OperationSpec(
            name=name,
            kind=self.kind,
            permission=self.permission or permission_for(connector, self.kind),
            arguments=self.arguments,
            description=self.description,
            reconcilable=reconcilable,
            result=self.result,
        )


def permission_for(connector: str, kind: OperationKind) -> str:
    """The default permission: ``<connector>.write`` for mutations, else ``<connector>.read``."""
    return f"{connector}.{'write' if kind is OperationKind.MUTATION else 'read'}"


def check_operation_name(name: str) -> str:
    """`name` when it is a JS identifier starting with a lowercase letter; else ``ValueError``."""
    if not _JS_NAME.match(name):
        raise ValueError(
            f"operation name {name!r} must be a JS identifier starting with a lowercase "
            "letter, such as 'addNote'"
        )
    return name


def resolve_path(path: str, folder: Path) -> str:
    """`path` as an absolute, normalised path: ``~`` expanded, a relative one joined to
    `folder` (the folder of the keep.toml that wrote it)."""
    expanded = Path(path).expanduser()
    return os.path.normpath(expanded if expanded.is_absolute() else folder / expanded)
