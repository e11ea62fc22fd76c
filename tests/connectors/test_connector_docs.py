"""The complete examples of docs/connectors-mcp.md and docs/connectors-mail.md run as written.

A ``python title="FILE"`` block is written to FILE in a fresh folder; ``python example``
blocks then run there in order, and what they print is the page's ``text`` block
that follows the words "prints:".
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.connectors.mcp.servers import free_port

DOCS = Path(__file__).parents[2] / "docs"
FENCE = re.compile(r'```python (example|title="([^"]+)")\n(.*?)```', re.DOTALL)


@pytest.mark.parametrize("page", ["connectors-mcp.md", "connectors-mail.md"])
def test_the_pages_examples_run_and_print_what_they_say(
    page: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (DOCS / page).read_text()
    runnable = text.replace("PORT = 8587", f"PORT = {free_port()}")
    blocks = FENCE.findall(runnable)
    assert any(kind == "example" for kind, _, _ in blocks)
    namespace: dict[str, object] = {"__name__": "docs_example"}
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        for kind, filename, code in blocks:
            if kind == "example":
                exec(compile(code, f"{page}:example", "exec"), namespace)
            else:
                (tmp_path / filename).write_text(code)
    finally:
        os.chdir(here)
    printed = capsys.readouterr().out.strip()
    documented = text.split("prints:\n\n```text\n", 1)[1].split("```", 1)[0].strip()
    assert printed == documented
