"""syntax-error: anything the parser or the engine cannot read.

What it does: reports every ERROR and MISSING node tree-sitter finds, each with
its range, and the early errors QuickJS reports when it compiles the script
(without running it): a ``let`` declared twice, ``break`` outside a loop,
octal literals, duplicate parameters. A script pasted with its Markdown code
fence (```` ```js ```` ... ```` ``` ````) gets one error on each fence line instead
of the parser's errors far from it.

Why is this bad? A script that does not compile never runs: the workflow
cannot be deployed, and every other check would read a guessed tree.
"""

from __future__ import annotations

from collections.abc import Iterator

from keep_sdk.validator._diagnostics import Severity
from keep_sdk.validator.facts import Analysis
from keep_sdk.validator.rule import Finding, Rule, RuleMeta
from keep_sdk.validator.rules._support import why

__all__ = ["rule"]

META = RuleMeta(
    id="syntax-error",
    severity=Severity.ERROR,
    description="The script is not a valid JavaScript module.",
    rationale=why(__doc__),
    messages={
        "parser": "syntax error: {detail}",
        "engine": "the JavaScript engine rejects this script: {detail}",
        "fence": "this line is a Markdown code fence, not JavaScript: {detail}",
    },
    hint=(
        "Fix the syntax at this position so the file is one valid ES2020 module; check the "
        "brackets, commas, quotes and declarations on this line and the line before it."
    ),
    hints={
        "fence": (
            "Remove the Markdown around the script: delete the ``` fence lines (and any prose "
            "before or after them) so the file holds only JavaScript."
        ),
    },
)


def check(analysis: Analysis) -> Iterator[Finding]:
    """One finding per syntax problem."""
    for problem in analysis.syntax:
        yield Finding(
            problem.source,
            start_byte=problem.start_byte,
            end_byte=problem.end_byte,
            arguments={"detail": problem.message},
        )


rule = Rule(META, check)
