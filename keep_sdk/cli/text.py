"""Terminal output that never reads outside text as markup.

Every string that comes from a script, an event, a connector or the store is
put on the screen as a `rich.text.Text` (never parsed for ``[bold]`` or
``[link=…]``), and every console the commands create has markup and
highlighting off. Lines are printed with ``soft_wrap`` so ids and commands are
never cut or folded: the terminal wraps them, and copying them gives them whole.
Every piece of text is neutralised by `keep_sdk.contract.text.visible` (the rule the
console applies too): a control character, escape sequence or bidi override in an
event title is shown as its escape (``\x1b``, ``\u202e``), never acted on.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from keep_sdk.contract.text import visible

__all__ = ["console", "line", "shown", "styled"]


def console(*, stderr: bool = False) -> Console:
    """A console that prints text as it is: no markup, no highlighting, no emoji codes."""
    return Console(stderr=stderr, markup=False, highlight=False, emoji=False)


def styled(value: object, style: str = "") -> Text:
    """`value` as literal text in `style`."""
    return Text(visible(str(value)), style=style)


def shown(message: object) -> str:
    """`message` (a program message that may quote outside text) for a plain ``echo``:
    its own line breaks kept, every other control shown as its escape."""
    return "\n".join(visible(part) for part in str(message).split("\n"))


def line(*parts: str | Text) -> Text:
    """One line joined from literal strings and `Text` pieces."""
    joined = Text()
    for part in parts:
        joined.append(part if isinstance(part, Text) else Text(visible(part)))
    return joined
