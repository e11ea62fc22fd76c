"""The API reference of the public facade ``keep_sdk``, rendered by mkdocstrings.

``keep_sdk.__all__`` is lazy (PEP 562): each name is imported from its home
module on first use. `identifiers` resolves every public name to the module
that defines it, so mkdocstrings (which reads source statically, with griffe)
documents the object itself rather than a lazy alias.
"""

from __future__ import annotations

import inspect
from types import ModuleType

from docsgen.page import Page

__all__ = ["PATH", "api_page", "identifiers"]

PATH = "reference/api.md"

_OPTIONS = """    options:
      heading_level: 3
      show_root_heading: true
      show_root_full_path: false
      show_source: false
      show_bases: true
      members_order: source
      filters: ["!^_"]
"""


def identifiers(facade: ModuleType, homes: dict[str, str]) -> dict[str, str]:
    """Each public name of `facade` mapped to the dotted path of its definition.

    A class or function defined in a module below its home (``Runtime`` lives in
    ``keep_sdk.runtime.engine``) is named there; anything else (an instance such
    as ``hookimpl``, or a class whose ``__module__`` was shortened for display)
    is named in its home module.
    """
    found = {}
    for name in facade.__all__:
        obj = getattr(facade, name)
        home = homes[name]
        module = getattr(obj, "__module__", "") or ""
        defined_below = module.startswith(home + ".") or module == home
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and defined_below:
            found[name] = f"{module}.{obj.__qualname__}"
        else:
            found[name] = f"{home}.{name}"
    return found


def api_page(facade: ModuleType, homes: dict[str, str], errors: ModuleType) -> Page:
    """The page: the facade's functions and classes, then its exceptions in the
    order of `errors.__all__`, each a mkdocstrings block."""
    ids = identifiers(facade, homes)
    error_names = [n for n in errors.__all__ if n in ids]
    others = sorted(n for n in ids if n not in error_names)
    doc = inspect.cleandoc(facade.__doc__ or "")
    parts = [
        "# API reference: `keep_sdk`\n",
        "Every public name of the facade `keep_sdk` (its `__all__`), generated at build "
        "time from the docstrings of the modules that define them. Import each from "
        "`keep_sdk` (`from keep_sdk import validate`).\n",
        doc + "\n",
        "## Functions and classes\n",
        *(f"::: {ids[n]}\n{_OPTIONS}" for n in others),
        "## Exceptions\n",
        inspect.cleandoc(errors.__doc__ or "") + "\n",
        *(f"::: {ids[n]}\n{_OPTIONS}" for n in error_names),
    ]
    return Page(PATH, "API (keep_sdk)", "\n".join(parts))
