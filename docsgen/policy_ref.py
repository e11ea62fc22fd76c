"""The host policy page: every field of `HostPolicy` and of the models it nests
(`SandboxLimits`, `BackoffPolicy`), with its type, default, bounds and meaning.

`HostPolicy`'s docstring points here (``docs/policy``). A field without a
``description`` is shown with an empty meaning; `missing_descriptions` lets a
test insist that none is missing.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from docsgen.markdown import code, table
from docsgen.page import Page

__all__ = ["PATH", "fields_of", "missing_descriptions", "policy_page"]

PATH = "policy.md"

_BOUNDS = {
    annotated_types.Gt: (">", "gt"),
    annotated_types.Ge: ("≥", "ge"),
    annotated_types.Lt: ("<", "lt"),
    annotated_types.Le: ("≤", "le"),
}


def _bounds(info: FieldInfo) -> str:
    shown = []
    for item in info.metadata:
        for kind, (symbol, attr) in _BOUNDS.items():
            if isinstance(item, kind):
                shown.append(f"{symbol} {getattr(item, attr):_}")
    return ", ".join(shown)


def _default(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return info.default


def _shown_default(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "see below" if value == type(value)() else code(value.model_dump_json())
    if isinstance(value, int | float) and not isinstance(value, bool):
        return code(f"{value:_}")
    return code(json.dumps(value))


def _type(info: FieldInfo) -> str:
    annotation = info.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    return code(text or str(annotation).replace("typing.", ""))


def fields_of(model: type[BaseModel]) -> list[tuple[str, FieldInfo]]:
    """The fields of `model` in declaration order."""
    return list(model.model_fields.items())


def missing_descriptions(*models: type[BaseModel]) -> list[str]:
    """``Model.field`` for every field of `models` that has no description."""
    return [
        f"{m.__name__}.{name}"
        for m in models
        for name, info in fields_of(m)
        if not info.description
    ]


def _section(model: type[BaseModel], prefix: str) -> str:
    rows = [
        (
            code(name),
            _type(info),
            _shown_default(_default(info)),
            _bounds(info),
            info.description or "",
        )
        for name, info in fields_of(model)
    ]
    return "\n".join(
        [
            f"## {model.__name__}\n",
            inspect.cleandoc(model.__doc__ or "") + "\n",
            f"In a policy: `{prefix}`.\n" if prefix else "",
            table(["field", "type", "default", "bounds", "meaning"], rows),
        ]
    )


def policy_page(host: type[BaseModel], nested: dict[type[BaseModel], str]) -> Page:
    """The page: `host` (HostPolicy) first, then each of the `nested` models with the
    path under which a policy holds it (``sandbox.*``)."""
    defaults = json.dumps(host().model_dump(mode="json"), indent=2)
    parts = [
        "# Host policy\n",
        "What the host allows a script and how it retries: `keep_sdk.model.HostPolicy`. "
        "Every field below is generated from the model at build time, with its default "
        "and bounds; a value outside the bounds is refused when the policy is built. "
        "Pass a policy to `keep_sdk.app.Installation.open(..., policy=...)` or to "
        "`keep_sdk.validate(..., policy=...)`; `keep validate --mutate-reads by_id` sets "
        "`mutate_reads`. Exceeding a sandbox limit is a logic error of the run "
        "(see [the sandbox](sandbox.md)).\n",
        "```python\nfrom keep_sdk.model import HostPolicy, SandboxLimits\n\n"
        'policy = HostPolicy(sandbox=SandboxLimits(cpu_time_s=2.0), mutate_reads="by_id")\n```\n',
        _section(host, ""),
        *(_section(model, prefix) for model, prefix in nested.items()),
        "## Every default\n",
        "`HostPolicy()` as JSON:\n",
        f"```json\n{defaults}\n```\n",
    ]
    return Page(PATH, "Host policy", "\n".join(parts))
