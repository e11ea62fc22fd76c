"""The complete example in docs/connectors.md runs as written and prints what it says."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "connectors.md"


def test_connectors_doc_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    text = DOC.read_text()
    blocks = re.findall(r"```python example\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 3
    namespace: dict[str, object] = {"__name__": "docs_example"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    printed = capsys.readouterr().out.strip()
    documented = text.split("prints what a script author")[1].split("```")[1].strip()
    assert printed == documented


def test_connectors_doc_listing_matches_keep_connectors() -> None:
    from keep_sdk.connectors import Manifest

    text = DOC.read_text()
    namespace: dict[str, object] = {"__name__": "docs_example"}
    exec(re.findall(r"```python example\n(.*?)```", text, flags=re.DOTALL)[0], namespace)
    crm = namespace["Crm"]
    listing = Manifest(connectors=[crm.manifest()]).to_text()  # type: ignore[attr-defined]
    assert listing in text
