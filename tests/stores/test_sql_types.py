"""The SQL column types read back exactly what they wrote, on any aware time."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.dialects import postgresql, sqlite

from keep_sdk.stores.sql._types import JsonText, UtcTimestamp

TIMESTAMP = UtcTimestamp()
DOCUMENT = JsonText()
DIALECTS = [sqlite.dialect(), postgresql.dialect()]
ZONES = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
)


@given(
    moment=st.datetimes(
        min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9998, 12, 30), timezones=ZONES
    )
)
def test_an_aware_time_reads_back_as_the_same_instant_in_utc(moment: dt.datetime) -> None:
    for dialect in DIALECTS:
        stored = TIMESTAMP.process_bind_param(moment, dialect)
        assert stored is not None
        assert len(stored) == 27
        assert stored.endswith("Z")
        back = TIMESTAMP.process_result_value(stored, dialect)
        assert back == moment
        assert back is not None
        assert back.utcoffset() == dt.timedelta(0)


@given(
    pair=st.lists(
        st.datetimes(
            min_value=dt.datetime(1, 1, 2),
            max_value=dt.datetime(9998, 12, 30),
            timezones=st.just(dt.UTC),
        ),
        min_size=2,
        max_size=2,
    )
)
def test_stored_text_sorts_in_time_order(pair: list[dt.datetime]) -> None:
    a, b = pair
    text_a = TIMESTAMP.process_bind_param(a, DIALECTS[0])
    text_b = TIMESTAMP.process_bind_param(b, DIALECTS[0])
    assert text_a is not None
    assert text_b is not None
    assert (text_a < text_b) == (a < b)


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match=r"naive datetime .*2026, 1, 1.*aware UTC times only"):
        TIMESTAMP.process_bind_param(dt.datetime(2026, 1, 1), DIALECTS[0])


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(value=JSON_VALUES)
def test_a_document_reads_back_as_written(value: object) -> None:
    for dialect in DIALECTS:
        stored = DOCUMENT.process_bind_param(value, dialect)
        assert isinstance(stored, str)
        assert DOCUMENT.process_result_value(stored, dialect) == value


def test_a_document_is_stored_compact_with_its_characters_as_written() -> None:
    """What `sqlite3` and `psql` show of a state or an argument: no padding, no escapes."""
    stored = DOCUMENT.process_bind_param({"name": "Zoë", "tags": ["日本", 1]}, DIALECTS[0])
    assert stored == '{"name":"Zoë","tags":["日本",1]}'
