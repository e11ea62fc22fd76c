"""Terminal output that never reads outside text as markup.

Every string that comes from a script, an event, a connector or the store is
put on the screen as a `rich.text.Text` (never parsed for ``[bold]`` or
``[link=…]``), and every console the commands create has markup and
highlighting off. Lines are printed with ``soft_wrap`` so ids and commands are
never cut or folded: the terminal wraps them, and copying them gives them whole.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

__all__ = ["console", "line", "styled"]


def console(*, stderr: bool = False) -> Console:
    """A console that prints text as it is: no markup, no highlighting, no emoji codes."""
    return Console(stderr=stderr, markup=False, highlight=False, emoji=False)


def styled(value: object, style: str = "") -> Text:
    """`value` as literal text in `style`."""
    return Text(str(value), style=style)


def line(*parts: str | Text) -> Text:
    """One line joined from literal strings and `Text` pieces."""
    joined = Text()
    for part in parts:
        joined.append(part if isinstance(part, Text) else Text(part))
    return joined
