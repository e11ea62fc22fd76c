"""The validator's cron check answers exactly as croniter, the runtime's scheduler, does."""

from __future__ import annotations

from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.validator.cron import is_valid_cron

_NUMBER = st.one_of(
    st.integers(min_value=0, max_value=7), st.integers(min_value=0, max_value=70)
).map(str)
_ATOM = st.one_of(
    st.just("*"),
    _NUMBER,
    st.tuples(_NUMBER, _NUMBER).map("-".join),
    st.sampled_from(["MON", "jan", "L", "7", "1#2", "?", "", "-1", "5-", "00", "07"]),
)
_ITEM = st.one_of(
    _ATOM, st.tuples(_ATOM, st.integers(min_value=0, max_value=99)).map(lambda t: f"{t[0]}/{t[1]}")
)
_FIELD = st.lists(_ITEM, min_size=1, max_size=3).map(",".join)
_SEPARATOR = st.sampled_from([" ", " ", " ", "  ", "\t"])


@st.composite
def expressions(draw: st.DrawFn) -> str:
    fields = draw(st.lists(_FIELD, min_size=4, max_size=6))
    text = fields[0]
    for field in fields[1:]:
        text += draw(_SEPARATOR) + field
    return text


@settings(max_examples=800, deadline=None)
@given(expressions())
def test_agrees_with_croniter(text: str) -> None:
    expected = len(text.split()) == 5 and bool(croniter.is_valid(text))
    assert is_valid_cron(text) == expected


_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))


@st.composite
def near_bounds(draw: st.DrawFn) -> str:
    """Expressions of the forms checked without croniter, with values around each bound."""
    fields = []
    for low, high in _BOUNDS:
        value = st.integers(min_value=max(low - 1, 0), max_value=high + 1)
        items = []
        for _ in range(draw(st.integers(min_value=1, max_value=2))):
            form = draw(st.sampled_from(["*", "n", "n-m", "*/s", "n-m/s", "n/s"]))
            n, m = draw(value), draw(value)
            s = draw(st.integers(min_value=0, max_value=high - low + 2))
            items.append(form.replace("n-m", f"{n}-{m}").replace("n", str(n)).replace("s", str(s)))
        fields.append(",".join(items))
    return " ".join(fields)


@settings(max_examples=800, deadline=None)
@given(near_bounds())
def test_agrees_with_croniter_around_the_bounds(text: str) -> None:
    assert is_valid_cron(text) == bool(croniter.is_valid(text))


def test_common_forms_are_valid_and_bad_bounds_are_not() -> None:
    for text in ("0 8 * * 1-5", "*/15 * * * *", "0 0 1 1 *", "5,10 0-23/2 1-31 1-12 0-6"):
        assert is_valid_cron(text), text
    for text in ("60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "*/0 * * * *", "* * * *"):
        assert not is_valid_cron(text), text
