"""The `llm` library as a fixer: any model `llm` knows repairs scripts (extra ``[llm]``).

`llm_fixer("gpt-4o-mini")` returns a `Fixer` that sends `Verdict.render()` (the
problems, hints, rules, connectors reference and the script) with `SYSTEM_PROMPT`
to the model and takes the script from its answer: the last fenced ``js``/
``javascript`` block, or the whole answer when it has none. An answer that is not a
script is simply checked and rejected in the next round.
"""

from __future__ import annotations

import re

from keep_sdk.errors import ConfigurationError
from keep_sdk.repair._loop import Fixer, Verdict

__all__ = ["SYSTEM_PROMPT", "extract_script", "llm_fixer"]

SYSTEM_PROMPT = (
    "You repair keep workflow scripts (JavaScript run in a sandbox: "
    "`export default Keep.workflow({...})`). You get a verdict listing what is wrong "
    "with the script, the rules it breaks, the connectors it may call and the script "
    "itself. Answer with the whole corrected script in one ```js fenced block. Change "
    "only what the verdict asks for: keep every recipient, argument and behaviour the "
    "verdict does not mention."
)
"""What the model is told it is doing."""

_FENCE = re.compile(r"```(?:js|javascript|mjs)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_script(answer: str) -> str:
    """The script in a model's `answer`: its last fenced code block, else the answer."""
    blocks = _FENCE.findall(answer)
    return (blocks[-1] if blocks else answer).strip() + "\n"


def llm_fixer(model: str, *, system: str = SYSTEM_PROMPT) -> Fixer:
    """A fixer asking the `llm` model named `model` (an id or alias `llm` knows).

    Raises `ConfigurationError` when `llm` is not installed or knows no such model.
    """
    try:
        import llm
    except ImportError:
        raise ConfigurationError(
            "the llm library is not installed; install keep-sdk[llm] (pip install "
            "'keep-sdk[llm]') and a plugin for your model"
        ) from None
    try:
        chosen = llm.get_model(model)
    except llm.UnknownModelError:
        raise ConfigurationError(
            f"llm knows no model {model!r}; `llm models` lists them (install the plugin "
            "that provides it)"
        ) from None

    def fix(verdict: Verdict) -> str:
        response = chosen.prompt(verdict.render(), system=system)
        return extract_script(response.text())

    return fix
