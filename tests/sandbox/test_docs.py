"""docs/sandbox.md documents every limit, outcome and phase-table operation."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from keep_sdk.model import SandboxLimits
from keep_sdk.sandbox import Limit, Outcome
from keep_sdk.sandbox.capabilities import TOPIC_OPERATIONS

DOC = Path(__file__).parents[2] / "docs" / "sandbox.md"


def test_every_limit_and_its_field_is_documented() -> None:
    text = DOC.read_text("utf-8")
    for limit in Limit:
        assert f"`{limit.value}`" in text, limit
    for field in SandboxLimits.model_fields:
        assert f"`{field}`" in text, field


def test_every_outcome_kind_is_documented() -> None:
    text = DOC.read_text("utf-8")
    union = get_args(get_args(Outcome)[0])
    for model in union:
        kind = model.model_fields["kind"].default
        assert f"`{kind}`" in text, kind
        assert f"`{model.__name__}(" in text, model.__name__


def test_every_topic_operation_is_documented() -> None:
    text = DOC.read_text("utf-8")
    for name in TOPIC_OPERATIONS:
        assert f"ctx.{name}(" in text, name
