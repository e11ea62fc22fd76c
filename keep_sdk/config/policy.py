"""The effective `HostPolicy` of a workflow, and where each of its values came from.

Precedence, lowest first: the built-in default, ``[policy]`` in keep.toml,
``[workflows.<name>.policy]``. Nested tables merge key by key over the effective
defaults, so overriding ``sandbox.cpu_time_s`` keeps every other sandbox limit, and a
partial ``[policy.reconcile_backoff]`` keeps the reconcile defaults (not the defaults
of a plain `BackoffPolicy`) for every field it does not set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue, ValidationError

from keep_sdk.config._errors import explain
from keep_sdk.model import HostPolicy

__all__ = [
    "DEFAULT",
    "FILE",
    "WORKFLOW",
    "PolicyValue",
    "checked_policy",
    "default_tree",
    "effective_policy",
    "merge",
    "policy_values",
]

DEFAULT = "default"
FILE = "keep.toml"
WORKFLOW = "workflow"


@dataclass(frozen=True)
class PolicyValue:
    """One leaf of the effective policy: its dotted key, value and source."""

    key: str
    value: JsonValue
    source: str


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`base` updated by `override`, nested mappings merged key by key."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def default_tree() -> dict[str, Any]:
    """The built-in policy as a tree of plain values: what a table merges over."""
    return HostPolicy().model_dump(mode="json")


def effective_policy(*trees: Mapping[str, Any]) -> HostPolicy:
    """The built-in policy with `trees` (checked, lowest precedence first) merged over it
    key by key."""
    merged = default_tree()
    for tree in trees:
        merged = merge(merged, tree)
    return HostPolicy.model_validate(merged)


def checked_policy(tree: Mapping[str, Any], *, prefix: str) -> tuple[dict[str, Any], list[str]]:
    """The fields `tree` sets, by their Python names (``cpu_time_s``, camelCase accepted),
    and the problems found, each naming its key under `prefix`; `tree` is checked merged
    over the built-in policy, as it will be used."""
    try:
        given = HostPolicy.model_validate(dict(tree)).model_dump(mode="json", exclude_unset=True)
        effective_policy(given)
    except ValidationError as exc:
        return {}, explain(exc, prefix=prefix)
    return given, []


def _leaves(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_leaves(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def policy_values(
    file_policy: Mapping[str, Any], workflow_policy: Mapping[str, Any] | None = None
) -> list[PolicyValue]:
    """Every leaf of the effective policy with its source (both trees already checked)."""
    effective = effective_policy(file_policy, workflow_policy or {})
    from_file = _leaves(file_policy)
    from_workflow = _leaves(workflow_policy or {})
    values = []
    for key, value in _leaves(effective.model_dump(mode="json")).items():
        source = WORKFLOW if key in from_workflow else FILE if key in from_file else DEFAULT
        values.append(PolicyValue(key=key, value=value, source=source))
    return values
