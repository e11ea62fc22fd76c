"""The plugin hook reference, from the specs and docstrings of ``keep_sdk.plugins.hookspecs``."""

from __future__ import annotations

import inspect
from types import FunctionType, ModuleType

from docsgen.page import Page

__all__ = ["PATH", "hook_specs", "hooks_page"]

PATH = "reference/hooks.md"


def hook_specs(module: ModuleType) -> list[FunctionType]:
    """The functions of `module` marked with its ``hookspec`` marker, in source order."""
    marker = f"{module.hookspec.project_name}_spec"
    specs = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, FunctionType) and hasattr(obj, marker)
    ]
    return sorted(specs, key=lambda f: f.__code__.co_firstlineno)


def _annotation(value: object) -> str:
    return value if isinstance(value, str) else inspect.formatannotation(value)


def _signature(spec: FunctionType) -> str:
    """``(arg: Type) -> Return`` as written in the source (annotations unquoted)."""
    sig = inspect.signature(spec)
    params = [
        p.name if p.annotation is p.empty else f"{p.name}: {_annotation(p.annotation)}"
        for p in sig.parameters.values()
    ]
    ret = "" if sig.return_annotation is sig.empty else f" -> {_annotation(sig.return_annotation)}"
    return f"({', '.join(params)}){ret}"


def hooks_page(module: ModuleType) -> Page:
    """One section per hook: its signature and its docstring, which is its contract."""
    parts = [
        "# Plugin hooks\n",
        "Generated from `keep_sdk/plugins/hookspecs.py` at build time. How a "
        "distribution registers a plugin, with examples: [the plugins guide](../plugins.md).\n",
        inspect.cleandoc(module.__doc__ or "") + "\n",
    ]
    for spec in hook_specs(module):
        signature = _signature(spec)
        parts += [
            f"## {spec.__name__}\n",
            f"```python\n@keep_sdk.hookimpl\ndef {spec.__name__}{signature}: ...\n```\n",
            inspect.cleandoc(spec.__doc__ or "(no contract written)") + "\n",
        ]
    return Page(PATH, "Plugin hooks", "\n".join(parts))
