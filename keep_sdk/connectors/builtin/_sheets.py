"""`sheets`: a spreadsheet double (listRows, getRow, appendRow, updateRow)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from keep_sdk.connectors.builtin._double import Doc, ServiceDouble
from keep_sdk.connectors.operation import operation
from keep_sdk.errors import PreconditionFailed
from keep_sdk.model import OperationKind, ReconcileOutcome

__all__ = ["ROW_SCHEMA", "AppendRow", "ListRows", "RowRef", "Sheets", "UpdateRow"]

Cell = str | int | float | bool | None
SheetId = Annotated[str, Field(min_length=1)]


_TEXT = {"type": "string"}

ROW_SCHEMA = {
    "type": "object",
    "description": "A row: its id and its cells in column order.",
    "properties": {
        "rowId": {**_TEXT, "description": "Its id (`ctx.sheets.getRow`, `updateRow`)."},
        "values": {
            "type": "array",
            "items": {"type": ["string", "number", "boolean", "null"]},
            "description": "Its cells, first column first.",
        },
    },
    "required": ["rowId", "values"],
    "additionalProperties": False,
}
"""A row as ``listRows`` and ``getRow`` return it."""


class _Args(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ListRows(_Args):
    """Arguments of ``ctx.sheets.listRows``."""

    spreadsheet_id: SheetId
    offset: Annotated[int, Field(ge=0)] = 0
    limit: Annotated[int, Field(ge=1, le=1000)] = 100


class RowRef(_Args):
    """Arguments of ``ctx.sheets.getRow``."""

    spreadsheet_id: SheetId
    row_id: Annotated[str, Field(min_length=1)]


class AppendRow(_Args):
    """Arguments of ``ctx.sheets.appendRow``."""

    spreadsheet_id: SheetId
    values: Annotated[list[Cell], Field(min_length=1, max_length=200)]


class UpdateRow(_Args):
    """Arguments of ``ctx.sheets.updateRow``."""

    spreadsheet_id: SheetId
    row_id: Annotated[str, Field(min_length=1)]
    values: Annotated[list[Cell], Field(min_length=1, max_length=200)]


def _sheet(state: Doc, spreadsheet_id: str) -> Doc:
    try:
        sheet: Doc = state["spreadsheets"][spreadsheet_id]
    except KeyError:
        known = ", ".join(sorted(state["spreadsheets"])) or "none"
        raise PreconditionFailed(
            f"spreadsheet {spreadsheet_id!r} does not exist (404); existing: {known}"
        ) from None
    return sheet


class Sheets(ServiceDouble):
    """Spreadsheets: read rows, append a row, update a row."""

    name = "sheets"

    @classmethod
    def empty_state(cls) -> Doc:
        return {"effects": [], "spreadsheets": {}}

    @operation(
        kind=OperationKind.READ,
        permission="sheets.read",
        args=ListRows,
        result={"type": "array", "items": ROW_SCHEMA},
    )
    def list_rows(self, args: ListRows) -> JsonValue:
        """Rows of a spreadsheet in order; each is {rowId, values}."""

        def read(state: Doc) -> JsonValue:
            rows = _sheet(state, args.spreadsheet_id)["rows"]
            return [
                {"rowId": r["rowId"], "values": r["values"]}
                for r in rows[args.offset : args.offset + args.limit]
            ]

        return self._read("listRows", read)

    @operation(
        kind=OperationKind.READ_BY_ID,
        permission="sheets.read",
        args=RowRef,
        result={"anyOf": [ROW_SCHEMA, {"type": "null"}]},
    )
    def get_row(self, args: RowRef) -> JsonValue:
        """One row by id, or null."""

        def read(state: Doc) -> JsonValue:
            rows = _sheet(state, args.spreadsheet_id)["rows"]
            row = next((r for r in rows if r["rowId"] == args.row_id), None)
            return None if row is None else {"rowId": row["rowId"], "values": row["values"]}

        return self._read("getRow", read)

    @operation(
        kind=OperationKind.MUTATION,
        permission="sheets.write",
        args=AppendRow,
        result={
            "type": "object",
            "properties": {"rowId": _TEXT, "rowNumber": {"type": "integer", "minimum": 1}},
            "required": ["rowId", "rowNumber"],
            "additionalProperties": False,
        },
    )
    def append_row(self, args: AppendRow, *, idempotency_key: str) -> JsonValue:
        """Append a row; returns {rowId, rowNumber}."""
        params = args.model_dump(mode="json", by_alias=True)

        def apply(state: Doc) -> JsonValue:
            rows = _sheet(state, args.spreadsheet_id)["rows"]
            row_id = f"row-{len(rows) + 1}"
            rows.append({"rowId": row_id, "values": list(args.values)})
            return {"rowId": row_id, "rowNumber": len(rows)}

        return self._mutate("appendRow", idempotency_key, params, apply)

    @append_row.reconciler
    def reconcile_append_row(self, args: AppendRow, idempotency_key: str) -> ReconcileOutcome:
        return self._reconcile_by_key("appendRow", idempotency_key)

    @operation(
        kind=OperationKind.MUTATION,
        permission="sheets.write",
        args=UpdateRow,
        result={
            "type": "object",
            "properties": {"rowId": _TEXT},
            "required": ["rowId"],
            "additionalProperties": False,
        },
    )
    def update_row(self, args: UpdateRow, *, idempotency_key: str) -> JsonValue:
        """Replace a row's values; returns {rowId}."""
        params = args.model_dump(mode="json", by_alias=True)

        def apply(state: Doc) -> JsonValue:
            rows = _sheet(state, args.spreadsheet_id)["rows"]
            row = next((r for r in rows if r["rowId"] == args.row_id), None)
            if row is None:
                raise PreconditionFailed(
                    f"row {args.row_id!r} does not exist in {args.spreadsheet_id!r} (404)"
                )
            row["values"] = list(args.values)
            return {"rowId": args.row_id}

        return self._mutate("updateRow", idempotency_key, params, apply)

    @update_row.reconciler
    def reconcile_update_row(self, args: UpdateRow, idempotency_key: str) -> ReconcileOutcome:
        return self._reconcile_by_key("updateRow", idempotency_key)
