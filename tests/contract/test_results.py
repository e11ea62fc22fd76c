"""Declared results as people and tools read them: the markdown reference and the .d.ts."""

from __future__ import annotations

import json

from keep_sdk.contract import ConnectorManifest, Manifest, OperationManifest
from keep_sdk.contract.results import EVENT_SCHEMA
from keep_sdk.contract.typescript import declarations
from keep_sdk.model import OperationKind

ROWS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"rowId": {"type": "string"}, "values": {"type": "array"}},
        "required": ["rowId", "values"],
        "additionalProperties": False,
    },
}


def _manifest() -> Manifest:
    declared = OperationManifest(
        name="listRows",
        kind=OperationKind.READ,
        permission="sheets.read",
        arguments={"type": "object", "properties": {}},
        result=ROWS,
    )
    undeclared = OperationManifest(
        name="lookUp",
        kind=OperationKind.READ,
        permission="sheets.read",
        arguments={"type": "object", "properties": {}},
    )
    return Manifest(
        connectors=[ConnectorManifest(name="sheets", operations=[declared, undeclared])]
    )


def test_markdown_shows_each_declared_result_and_the_event_shape() -> None:
    text = _manifest().to_markdown()
    listed = text.split("### `ctx.sheets.listRows({})`")[1].split("### ")[0]
    assert "Returns:" in listed
    assert json.dumps(ROWS, indent=2, sort_keys=True) in listed
    looked_up = text.split("### `ctx.sheets.lookUp({})`")[1]
    assert "Returns:" not in looked_up
    assert json.dumps(EVENT_SCHEMA, indent=2, sort_keys=True) in text


def test_typescript_types_a_declared_result_and_leaves_an_undeclared_one_any() -> None:
    text = declarations(_manifest())
    written = "type ListRowsResult = {\n      rowId: string;\n      values: unknown[];\n    }[];"
    assert written in text
    assert "type LookUpResult = any;" in text
    assert "listRows(args: ListRowsArguments): Promise<ListRowsResult>;" in text


def test_a_manifest_without_results_still_loads() -> None:
    recorded = _manifest().model_dump(mode="json")
    for connector in recorded["connectors"]:
        for op in connector["operations"]:
            del op["result"]
    loaded = Manifest.model_validate(recorded)
    assert [op.result for op in loaded.connectors[0].operations] == [None, None]


def test_keep_connectors_markdown_shows_what_a_builtin_operation_returns() -> None:
    from click.testing import CliRunner

    from keep_sdk.cli import cli

    result = CliRunner().invoke(cli, ["connectors", "sheets.listRows", "--format", "markdown"])
    assert result.exit_code == 0, result.output
    returned = result.output.split("Returns:")[1]
    assert '"rowId"' in returned
    assert '"values"' in returned
    assert '"messageId"' in result.output.split("Returns:")[0]
