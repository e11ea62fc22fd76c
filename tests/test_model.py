import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from keep_sdk.model import (
    BackoffPolicy,
    HostPolicy,
    MutationApplied,
    MutationNone,
    MutationResult,
    MutationSkipped,
    PrepareResult,
    PublishRequest,
    RunStatus,
    explain_validation_error,
    json_schema,
    schema_names,
)


def test_prepare_result_accepts_the_script_spelling() -> None:
    result = PrepareResult.model_validate(
        {
            "reservations": [{"topic": "email.received", "ids": ["m1", "m2"]}],
            "data": {"from": "alice@example.com"},
            "ui": {"title": "Add row for alice@example.com"},
            "wakeAt": "2026-11-22T10:00:00+01:00",
        }
    )
    assert result.wake_at == dt.datetime(2026, 11, 22, 9, 0, tzinfo=dt.UTC)
    assert result.reserved_ids == {"email.received": ["m1", "m2"]}
    assert result.model_dump(by_alias=True, mode="json")["wakeAt"] == "2026-11-22T09:00:00Z"


def test_a_wake_time_without_zone_is_utc() -> None:
    result = PrepareResult.model_validate({"wakeAt": "2026-11-22T10:00:00"})
    assert result.wake_at is not None
    assert result.wake_at.utcoffset() == dt.timedelta(0)


def test_reserved_ids_merge_repeated_topics_without_duplicates() -> None:
    result = PrepareResult.model_validate(
        {"reservations": [{"topic": "a", "ids": ["1", "2"]}, {"topic": "a", "ids": ["2", "3"]}]}
    )
    assert result.reserved_ids == {"a": ["1", "2", "3"]}


def test_invalid_prepare_result_explained_for_a_script_author() -> None:
    with pytest.raises(ValidationError) as info:
        PrepareResult.model_validate(
            {"reservations": [{"topic": "t", "ids": []}], "wakeAt": "tomorrow", "date": {}}
        )
    lines = explain_validation_error(info.value, subject="prepare() result")
    assert len(lines) == 3
    assert lines[0].startswith(
        "prepare() result: `reservations[0].ids`: List should have at least 1"
    )
    assert lines[1].startswith("prepare() result: `wakeAt`: Input should be a valid datetime")
    assert lines[1].endswith("(got 'tomorrow')")
    assert lines[2] == "prepare() result: `date` is not a known field; remove it"


def test_data_must_be_json() -> None:
    with pytest.raises(ValidationError):
        PrepareResult.model_validate({"data": {"when": object()}})


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ({"status": "applied", "result": {"rowId": "r1"}}, MutationApplied),
        ({"status": "none"}, MutationNone),
        ({"status": "skipped"}, MutationSkipped),
    ],
)
def test_mutation_result_is_a_discriminated_union(raw: dict[str, object], kind: type) -> None:
    assert isinstance(TypeAdapter(MutationResult).validate_python(raw), kind)


def test_publish_request_requires_a_title() -> None:
    with pytest.raises(ValidationError) as info:
        PublishRequest.model_validate({"messageId": "m1", "payload": {}})
    assert explain_validation_error(info.value) == ["`title` is required but missing"]


def test_run_status_values_are_the_specification_strings() -> None:
    assert [s.value for s in RunStatus] == [
        "active",
        "paused:transient",
        "paused:approval",
        "paused:reconciliation",
        "paused:waiting",
        "paused:timeout",
        "failed:logic",
        "failed:internal",
        "committed",
        "crashed",
    ]


def test_policy_rejects_a_stack_of_zero() -> None:
    with pytest.raises(ValidationError):
        HostPolicy.model_validate({"sandbox": {"stackBytes": 0}})


@given(st.integers(min_value=1, max_value=60), st.floats(min_value=0, max_value=0.999))
def test_backoff_stays_within_jitter_of_the_capped_exponential(attempt: int, r: float) -> None:
    policy = BackoffPolicy(base_s=1.0, factor=2.0, cap_s=300.0, jitter=0.3)
    raw = min(300.0, 2.0 ** (attempt - 1))
    assert raw * 0.7 - 1e-9 <= policy.delay(attempt, unit_random=r) <= raw * 1.3 + 1e-9


@pytest.mark.parametrize("name", schema_names())
def test_every_schema_is_published_by_alias(name: str) -> None:
    schema = json_schema(name)
    assert schema["title"] == name
    text = str(schema)
    assert "message_id" not in text
    assert "wake_at" not in text
