"""`checked_trusted`: `keep_sdk.model.trusted` that asserts what it built is what validation
builds, patched in where the SDK builds models of its own values without validating them
(the SQL store's rows, the sandbox's results) so that a whole suite checks every one."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from keep_sdk.model import trusted

__all__ = ["checked_trusted"]

Model = TypeVar("Model", bound=BaseModel)


def checked_trusted(cls: type[Model], fields: dict[str, Any]) -> Model:
    """`trusted`, asserting that the model is what validating `fields` builds: the same
    fields, equal, the same JSON, and every field's value of the same type."""
    built = trusted(cls, dict(fields))
    validated = cls.model_validate(fields)
    assert set(fields) == set(cls.model_fields), cls.__name__
    assert built == validated, cls.__name__
    assert built.model_dump_json() == validated.model_dump_json(), cls.__name__
    for name in cls.model_fields:
        kinds = type(getattr(built, name)), type(getattr(validated, name))
        assert kinds[0] is kinds[1], (cls.__name__, name, kinds)
    return built
