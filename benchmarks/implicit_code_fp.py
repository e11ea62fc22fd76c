"""False positives of the `implicit-code` rule: intended-valid scripts it refuses.

Two sets: the project's valid scripts (every ``.js`` under ``fixtures/`` except the
invalid ones and the realistic set below, and every ``js`` example in ``docs/`` that
declares a workflow outside an ``## Incorrect`` section), and the realistic set of
scripts that use getters, ``toJSON``, comparators, replacers and other hooks without a
ctx call (``fixtures/workflows/valid/implicit_*.js``). Prints, per set, how many
scripts the rule refuses. Run from a checkout: ``python benchmarks/implicit_code_fp.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

from keep_sdk import validate

ROOT = Path(__file__).parents[1]
REALISTIC = sorted((ROOT / "fixtures" / "workflows" / "valid").glob("implicit_*.js"))
_BLOCK = re.compile(r"^## (.*?)$|```(?:js|javascript)\n(.*?)```", re.S | re.M)


def project_scripts() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    new = {p.name for p in REALISTIC} | {"named_callbacks_reads.js", "named_async_helper_map.js"}
    for path in sorted((ROOT / "fixtures").rglob("*.js")):
        if "invalid" in path.parts or path.name in new:
            continue
        found.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    for page in sorted((ROOT / "docs").rglob("*.md")):
        section = ""
        for number, match in enumerate(_BLOCK.finditer(page.read_text(encoding="utf-8"))):
            if match.group(1) is not None:
                section = match.group(1)
            elif "Keep.workflow" in match.group(2) and section != "Incorrect":
                found.append((f"{page.relative_to(ROOT)}#{number}", match.group(2)))
    return found


def refused(scripts: list[tuple[str, str]]) -> list[str]:
    return [
        name
        for name, text in scripts
        if "implicit-code" in {d.rule for d in validate(text, filename=name).diagnostics}
    ]


def main() -> None:
    sets = {
        "project valid scripts": project_scripts(),
        "realistic hook scripts": [(p.name, p.read_text(encoding="utf-8")) for p in REALISTIC],
    }
    for label, scripts in sets.items():
        names = refused(scripts)
        share = 100 * len(names) / len(scripts) if scripts else 0.0
        print(f"{label}: {len(names)}/{len(scripts)} refused by implicit-code ({share:.0f}%)")
        for name in names:
            print(f"  {name}")


if __name__ == "__main__":
    main()
