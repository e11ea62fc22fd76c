"""The .d.ts of the script API: the JSON Schema converter, agreement with the manifests,
and `tsc --noEmit` over the project's own fixtures."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from keep_sdk.contract.phases import allowed_kinds
from keep_sdk.contract.typescript import declarations, schema_type
from keep_sdk.model import HandlerPhase
from keep_sdk.plugins import default_plugins

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "fixtures" / "workflows"
CACHE = ROOT / ".cache" / "npm"
TSC = CACHE / "node_modules" / ".bin" / "tsc"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "string"),
        ({"type": "integer"}, "number"),
        ({"type": ["string", "null"]}, "string | null"),
        ({"enum": ["a", "b"]}, '"a" | "b"'),
        ({"const": 3}, "3"),
        ({"anyOf": [{"type": "string"}, {"type": "boolean"}]}, "string | boolean"),
        (
            {"allOf": [{"anyOf": [{"type": "string"}, {"type": "null"}]}, {}]},
            "(string | null) & unknown",
        ),
        ({"type": "array", "items": {"type": "number"}}, "number[]"),
        ({"type": "array", "items": {"enum": ["x", "y"]}}, '("x" | "y")[]'),
        ({"prefixItems": [{"type": "string"}, {"type": "number"}]}, "[string, number]"),
        ({}, "unknown"),
        (False, "never"),
        ({"type": "object", "additionalProperties": False}, "{}"),
        ({"type": "object"}, "{\n  [key: string]: unknown;\n}"),
        (
            {"type": "object", "additionalProperties": {"type": "number"}},
            "{\n  [key: string]: number;\n}",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b-c": {"type": "number"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            '{\n  a: string;\n  "b-c"?: number;\n}',
        ),
        (
            {"$defs": {"Id": {"type": "string"}}, "$ref": "#/$defs/Id"},
            "string",
        ),
        (
            {
                "$defs": {"Node": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                "$ref": "#/$defs/Node",
            },
            "unknown[]",
        ),
    ],
)
def test_schema_type(schema: Any, expected: str) -> None:
    assert schema_type(schema) == expected


def test_descriptions_and_defaults_become_jsdoc() -> None:
    written = schema_type(
        {
            "type": "object",
            "properties": {
                "q": {"type": "string", "description": "The ``query`` */", "default": "x"}
            },
            "additionalProperties": False,
        }
    )
    assert '/**\n   * The `query` *\\/\n   * @default "x"\n   */\n  q?: string;' in written


def _block(text: str, start: str) -> str:
    body = text[text.index(start) + len(start) :]
    depth = 1
    for index, char in enumerate(body):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0:
            return body[:index]
    return body


def test_each_phase_declares_exactly_the_operations_the_phase_table_allows() -> None:
    manifest = default_plugins().manifest()
    text = declarations(manifest)
    for connector in manifest.connectors:
        namespace = _block(text, f"namespace {connector.name} {{")
        for op in connector.operations:
            written = schema_type(op.arguments, indent="    ")
            assert f"type {op.name[0].upper()}{op.name[1:]}Arguments = {written};" in namespace
        for phase in HandlerPhase:
            allowed = {op.name for op in connector.operations if op.kind in allowed_kinds(phase)}
            title = f"interface {phase.value.title()} {{"
            declared = (
                set(re.findall(r"^\s+(\w+)\(args:", _block(namespace, title), re.M))
                if title in namespace
                else set()
            )
            assert declared == allowed, (connector.name, phase)


def _tsc() -> Path:
    if TSC.is_file():
        return TSC
    npm = shutil.which("npm")
    if npm is None:
        if os.environ.get("KEEP_CI"):
            pytest.fail("CI must run the TypeScript check: .ci/run installs typescript with npm")
        pytest.skip("no npm on this machine to install typescript (apt-get install npm)")
    subprocess.run(
        [npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "typescript@5"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return TSC


def _check(tmp_path: Path, scripts: list[Path]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "keep.d.ts").write_text(declarations(default_plugins().manifest()))
    return subprocess.run(
        [
            str(_tsc()),
            *("--noEmit", "--allowJs", "--checkJs", "--target", "es2022"),
            *("--module", "esnext", "--lib", "es2023"),
            str(tmp_path / "keep.d.ts"),
            *map(str, scripts),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )


JS_ONLY = {
    "implicit_duration_valueof.js": "compares an object by its valueOf (`d > 5`)",
    "implicit_thenable_value.js": "awaits a plain thenable object",
}
"""Valid scripts that lean on JavaScript coercions TypeScript refuses by design, whatever
the declarations say; each keeps no `ctx` call in the coercion (the validator's fixtures)."""

UNDECLARED_READS = {
    "spec_06_declaration_shape.js": "reads `emails.lastCursor` as the specification does",
    "spec_06_producer_state.js": "reads `emails.lastCursor` as the specification does",
    "spec_06a_email_to_sheets.js": "reads `emails.lastCursor` as the specification does",
}
"""Valid scripts that read a field the declared result does not have (``gmail.search``
returns an array): TypeScript refuses the read, the validator leaves a plain read alone."""

VALID = sorted(
    [
        *(
            p
            for p in (FIXTURES / "valid").glob("*.js")
            if p.name not in JS_ONLY and p.name not in UNDECLARED_READS
        ),
        FIXTURES / "demo" / "invoices.js",
        FIXTURES / "durable" / "onboarding.js",
    ]
)


def test_every_valid_fixture_type_checks_against_the_declarations(tmp_path: Path) -> None:
    result = _check(tmp_path, VALID)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_mutation_in_prepare_does_not_type_check(tmp_path: Path) -> None:
    script = tmp_path / "early.js"
    script.write_text(
        (FIXTURES / "demo" / "invoices.js")
        .read_text()
        .replace(
            "const [invoice] = await ctx.peek(",
            'await ctx.sheets.appendRow({ spreadsheetId: "invoices", values: [] });\n'
            "        const [invoice] = await ctx.peek(",
            1,
        )
    )
    result = _check(tmp_path, [script])
    assert result.returncode != 0
    assert "error TS2339: Property 'appendRow' does not exist on type 'Prepare'" in result.stdout
