"""The JSON Schema of case files and scenario files, for ``keep schema`` and editors."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from keep_sdk.cases._model import CaseFile, Scenario

__all__ = ["SCHEMAS", "schema_of"]

SCHEMAS: dict[str, type[BaseModel]] = {"keep-case": CaseFile, "keep-scenario": Scenario}
"""Name → model: ``keep-case`` is a ``*.keep.yaml`` file, ``keep-scenario`` a scenario."""

_TITLES = {
    "keep-case": "Workflow case file of keep (*.keep.yaml)",
    "keep-scenario": "Conformance scenario file of keep",
}


def schema_of(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the file model `name` (see `SCHEMAS`)."""
    schema = SCHEMAS[name].model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://keep-sdk.dev/schemas/{name}.schema.json",
        **schema,
        "title": _TITLES[name],
    }
