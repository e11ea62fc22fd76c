"""The README's workflow example is a script the validator accepts."""

import re
from pathlib import Path

from keep_sdk import validate

README = Path(__file__).parents[1] / "README.md"


def test_the_readme_workflow_validates_clean() -> None:
    [script] = re.findall(r"```js\n(.*?)```", README.read_text(), flags=re.DOTALL)
    report = validate(script, filename="README.md")
    assert [d.rule for d in report.diagnostics] == []
    assert report.workflow is not None
    assert [c.name for c in report.workflow.consumers] == ["processEmail"]
