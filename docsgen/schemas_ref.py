"""The JSON Schemas of the contract models, exactly as ``keep schema NAME`` prints them."""

from __future__ import annotations

import json

from docsgen.markdown import code, table
from docsgen.page import Page
from keep_sdk.model import json_schema, schema_names

__all__ = ["PATH", "schemas_page"]

PATH = "reference/schemas.md"


def schemas_page() -> Page:
    """An index of the models, then one section per model with its schema."""
    names = schema_names()
    schemas = {name: json_schema(name) for name in names}
    rows = [
        (f"[{code(n)}](#{n.lower()})", (schemas[n].get("description") or "").split("\n\n")[0])
        for n in names
    ]
    parts = [
        "# JSON Schemas of the contract models\n",
        "The data keep_sdk stores and exchanges, as JSON Schema (fields spelled as "
        "scripts and `--json` output spell them). Generated at build time from "
        "`keep_sdk.model`; `keep schema NAME` prints the same, `keep schema --list` "
        "the names.\n",
        table(["model", "what it is"], rows),
    ]
    for name in names:
        parts += [
            f"## {name}\n",
            f"```sh\nkeep schema {name}\n```\n",
            "```json\n" + json.dumps(schemas[name], indent=2) + "\n```\n",
        ]
    return Page(PATH, "JSON Schemas", "\n".join(parts))
