"""Field ids of the tree-sitter JavaScript grammar, resolved once at import.

``Node.child_by_field_id`` is about twice as fast as ``child_by_field_name``
(163 ns against 358 ns per call on the reference machine), and the analysis
asks for a field on most nodes it visits. Each constant is named after its
field: ``node.child_by_field_id(Field.BODY)`` is ``node.child_by_field_name("body")``.
"""

from __future__ import annotations

from typing import Final

from keep_sdk.validator.source import JAVASCRIPT

__all__ = ["Field"]


def _field(name: str) -> int:
    found = JAVASCRIPT.field_id_for_name(name)
    if found is None:
        raise LookupError(f"the tree-sitter JavaScript grammar has no field named {name!r}")
    return found


class Field:
    """The id of every grammar field the validator reads."""

    ALTERNATIVE: Final = _field("alternative")
    ARGUMENT: Final = _field("argument")
    ARGUMENTS: Final = _field("arguments")
    BODY: Final = _field("body")
    CONDITION: Final = _field("condition")
    CONSEQUENCE: Final = _field("consequence")
    CONSTRUCTOR: Final = _field("constructor")
    DECLARATION: Final = _field("declaration")
    FINALIZER: Final = _field("finalizer")
    FUNCTION: Final = _field("function")
    HANDLER: Final = _field("handler")
    INCREMENT: Final = _field("increment")
    INDEX: Final = _field("index")
    INITIALIZER: Final = _field("initializer")
    KEY: Final = _field("key")
    KIND: Final = _field("kind")
    LABEL: Final = _field("label")
    LEFT: Final = _field("left")
    NAME: Final = _field("name")
    OBJECT: Final = _field("object")
    OPERATOR: Final = _field("operator")
    PARAMETER: Final = _field("parameter")
    PARAMETERS: Final = _field("parameters")
    PROPERTY: Final = _field("property")
    RIGHT: Final = _field("right")
    VALUE: Final = _field("value")
