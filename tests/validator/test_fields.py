"""The grammar field ids the analysis reads by id name the fields they say."""

from __future__ import annotations

from keep_sdk.validator.fields import Field
from keep_sdk.validator.source import JAVASCRIPT, parse_tree


def test_every_constant_is_the_id_of_the_field_it_is_named_after() -> None:
    constants = {name: value for name, value in vars(Field).items() if name.isupper()}
    assert len(constants) == 26
    for name, field_id in constants.items():
        assert JAVASCRIPT.field_name_for_id(field_id) == name.lower()


def test_reading_by_id_finds_the_same_child_as_reading_by_name() -> None:
    tree = parse_tree(b"const f = (a, b) => { if (a) { return b; } else { return a; } };")
    declarator = tree.root_node.named_children[0].named_children[0]
    function = declarator.child_by_field_id(Field.VALUE)
    assert function is not None
    assert function.type == "arrow_function"
    body = function.child_by_field_id(Field.BODY)
    assert body is not None
    statement = body.named_children[0]
    for field in ("condition", "consequence", "alternative"):
        by_id = statement.child_by_field_id(getattr(Field, field.upper()))
        by_name = statement.child_by_field_name(field)
        assert by_id is not None
        assert by_name is not None
        assert by_id.id == by_name.id
