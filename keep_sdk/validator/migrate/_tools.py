"""The original product's tool calls, the ``ctx`` calls that replace them, and how
their results differ."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TOOL_OPERATIONS", "ResultShape", "ToolOperation"]


@dataclass(frozen=True)
class ResultShape:
    """What the old call returned (`old`) and what the new one returns (`new`).

    `unwrap` maps a property of the old result to the suffix that turns the new
    result into that property's value (``messages`` → ``""``: the array itself);
    `same` are properties both results have with the same meaning.
    """

    old: str
    new: str
    unwrap: tuple[tuple[str, str], ...] = ()
    same: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolOperation:
    """``<Tool>.api({method, ...})`` with this `method` becomes ``ctx.<target>({...})``.

    `renames` maps the old argument keys to the operation's; `dropped` are keys
    the operation has no use for (``account``: here a connector is configured once);
    `result` says how the result's shape changed.
    """

    target: str
    renames: tuple[tuple[str, str], ...] = ()
    dropped: tuple[str, ...] = ("account", "userId")
    result: ResultShape | None = None


_MESSAGE = "{id, from, to, subject, body, receivedAt}"

TOOL_OPERATIONS: dict[tuple[str, str], ToolOperation] = {
    ("Gmail", "users.messages.list"): ToolOperation(
        "gmail.search",
        (("q", "query"), ("maxResults", "limit")),
        result=ResultShape(
            "{messages: [{id, threadId}], nextPageToken}",
            f"an array of messages {_MESSAGE}",
            unwrap=(("messages", ""),),
        ),
    ),
    ("Gmail", "users.messages.get"): ToolOperation(
        "gmail.getById",
        result=ResultShape(
            "{id, threadId, snippet, payload: {headers, body}}",
            f"{_MESSAGE} or null",
            same=("id",),
        ),
    ),
    ("Gmail", "users.messages.send"): ToolOperation(
        "gmail.send",
        result=ResultShape("{id, threadId, labelIds}", "{id, threadId}", same=("id", "threadId")),
    ),
    ("GoogleSheets", "spreadsheets.values.get"): ToolOperation(
        "sheets.listRows",
        (),
        ("account", "range", "majorDimension", "valueRenderOption"),
        result=ResultShape(
            "{range, values: [[...]]}",
            "an array of rows {rowId, values}",
            unwrap=(("values", ".map((r) => r.values)"),),
        ),
    ),
    ("GoogleSheets", "spreadsheets.values.append"): ToolOperation(
        "sheets.appendRow",
        (),
        ("account", "range", "valueInputOption", "insertDataOption"),
        result=ResultShape("{spreadsheetId, tableRange, updates}", "{rowId, rowNumber}"),
    ),
}
"""The tool methods with a connector operation here; any other tool call is left for a person."""
