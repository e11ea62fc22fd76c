"""docs/plugins.md documents every hook with its exact arguments."""

import re
from pathlib import Path

from keep_sdk.plugins import KeepPlugins

DOC = Path(__file__).parents[2] / "docs" / "plugins.md"


def test_every_hook_is_documented_with_its_arguments() -> None:
    headings = set(re.findall(r"^### (\w+\(.*\))$", DOC.read_text(), flags=re.MULTILINE))
    pm = KeepPlugins(load_entry_points=False).pm
    for name, caller in vars(pm.hook).items():
        if name.startswith("_"):
            continue
        assert caller.spec is not None
        expected = f"{name}({', '.join(caller.spec.argnames)})"
        assert expected in headings, f"docs/plugins.md lacks a heading '### {expected}'"
