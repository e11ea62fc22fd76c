"""Build pydantic models from values the validator produced itself, without re-validating them.

The validator creates a dozen models per script (manifest, handler locations,
diagnostics, the report). Their values come from the validator's own code,
never from the script, so validation would only repeat what the code already
guarantees. `trusted` is ``model_construct`` without its per-field defaults,
alias lookup and post-init handling: these models have no post-init, and their
camelCase aliases only spell JSON (fields are given by name).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["trusted"]

Model = TypeVar("Model", bound=BaseModel)

_set = object.__setattr__


def trusted(cls: type[Model], fields: dict[str, Any]) -> Model:
    """An instance of `cls` holding `fields`, which must name every field of `cls` exactly.

    Equal to ``cls.model_construct(**fields)``; nothing is validated. Only for
    models that accept their fields by name (no aliases, or ``populate_by_name``),
    without private attributes or ``model_post_init``, and with ``extra`` not set
    to ``allow``.
    """
    model = cls.__new__(cls)
    _set(model, "__dict__", fields)
    _set(model, "__pydantic_fields_set__", set(fields))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model
