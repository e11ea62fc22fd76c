"""Models the SDK builds without validation (`keep_sdk.model.trusted`: the validator's
models, the SQL store's rows, the sandbox's results) are what validation would build.

The store's and the sandbox's are checked against their validated copies throughout their
suites (`tests/trusted_models.py`); here every model built trusted has nothing `trusted`
skips, and the validator's reports equal their validated copies."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from keep_sdk import validate
from keep_sdk.contract.workflow import (
    ConsumerManifest,
    CronSchedule,
    DefaultExport,
    HandlerLocation,
    IntervalSchedule,
    ProducerManifest,
    WorkflowManifest,
)
from keep_sdk.model import Event, LedgerEntry, trusted
from keep_sdk.sandbox.outcome import Completed, HostCall, PhaseResult, Trace
from keep_sdk.stores import HandlerRecord, WorkflowRecord
from keep_sdk.validator import Diagnostic, Report

FIXTURES = Path(__file__).parents[1] / "fixtures" / "workflows"
TRUSTED_MODELS = (
    Completed,
    ConsumerManifest,
    CronSchedule,
    DefaultExport,
    Diagnostic,
    Event,
    HandlerLocation,
    HandlerRecord,
    HostCall,
    IntervalSchedule,
    LedgerEntry,
    PhaseResult,
    ProducerManifest,
    Report,
    Trace,
    WorkflowManifest,
    WorkflowRecord,
)


@pytest.mark.parametrize("model", TRUSTED_MODELS, ids=lambda m: m.__name__)
def test_models_built_trusted_have_nothing_trusted_skips(model: type[BaseModel]) -> None:
    assert model.model_config.get("extra") != "allow"
    assert not model.__private_attributes__
    assert not model.__pydantic_post_init__
    camel = model.model_config.get("populate_by_name") is True
    for name, field in model.model_fields.items():
        assert field.alias is None or camel, name
        assert field.validation_alias in (None, field.alias), name


def test_trusted_equals_model_construct() -> None:
    fields = {"kind": "interval", "seconds": 60.0, "every": "1m"}
    built = trusted(IntervalSchedule, dict(fields))
    assert built == IntervalSchedule.model_construct(**fields)
    assert built == IntervalSchedule.model_validate(fields)
    assert built.model_fields_set == set(fields)


def _every_field_set(model: BaseModel) -> None:
    assert set(model.__dict__) == set(type(model).model_fields), type(model).__name__
    for value in model.__dict__.values():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, BaseModel):
                _every_field_set(item)


@pytest.mark.parametrize(
    "path", sorted(FIXTURES.glob("*/*.js")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_reports_match_their_validated_copy(path: Path) -> None:
    report = validate(path.read_text(), filename=path.name)
    _every_field_set(report)
    assert Report.model_validate(report.model_dump()) == report
    assert Report.model_validate_json(report.model_dump_json()) == report
