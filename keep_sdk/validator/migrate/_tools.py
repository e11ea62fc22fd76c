"""The original product's tool calls and the ``ctx`` calls that replace them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TOOL_OPERATIONS", "ToolOperation"]


@dataclass(frozen=True)
class ToolOperation:
    """``<Tool>.api({method, ...})`` with this `method` becomes ``ctx.<target>({...})``.

    `renames` maps the old argument keys to the operation's; `dropped` are keys
    the operation has no use for (``account``: here a connector is configured once).
    """

    target: str
    renames: tuple[tuple[str, str], ...] = ()
    dropped: tuple[str, ...] = ("account", "userId")


TOOL_OPERATIONS: dict[tuple[str, str], ToolOperation] = {
    ("Gmail", "users.messages.list"): ToolOperation("gmail.search", (("q", "query"),)),
    ("Gmail", "users.messages.get"): ToolOperation("gmail.getById"),
    ("Gmail", "users.messages.send"): ToolOperation("gmail.send"),
    ("GoogleSheets", "spreadsheets.values.get"): ToolOperation(
        "sheets.listRows", (), ("account", "range")
    ),
    ("GoogleSheets", "spreadsheets.values.append"): ToolOperation(
        "sheets.appendRow", (), ("account", "range", "valueInputOption")
    ),
}
"""The tool methods with a connector operation here; any other tool call is left for a person."""
