"""The in-memory doubles change their live document in place: a refused call must leave
it exactly as it was, an applied one must add exactly its effect, and a result handed
out must not change when the service changes afterwards."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.errors import InvalidArguments, PreconditionFailed

SHEETS = ("reports", "missing")
CHANNELS = ("#finance", "#missing")
ROWS = ("row-1", "row-2", "row-9")

calls = st.one_of(
    st.tuples(
        st.just("sheets"),
        st.just("appendRow"),
        st.fixed_dictionaries(
            {
                "spreadsheetId": st.sampled_from(SHEETS),
                "values": st.lists(st.text(), min_size=1, max_size=3),
            }
        ),
    ),
    st.tuples(
        st.just("sheets"),
        st.just("updateRow"),
        st.fixed_dictionaries(
            {
                "spreadsheetId": st.sampled_from(SHEETS),
                "rowId": st.sampled_from(ROWS),
                "values": st.lists(st.integers(), min_size=1, max_size=3),
            }
        ),
    ),
    st.tuples(
        st.just("slack"),
        st.just("postMessage"),
        st.fixed_dictionaries({"channel": st.sampled_from(CHANNELS), "text": st.text()}),
    ),
    st.tuples(
        st.just("gmail"),
        st.just("send"),
        st.fixed_dictionaries(
            {"to": st.just("a@example.com"), "subject": st.text(), "body": st.text()}
        ),
    ),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(calls, max_size=25))
def test_refused_calls_change_nothing_and_applied_calls_add_one_effect(
    sequence: list[tuple[str, str, dict[str, Any]]],
) -> None:
    doubles = {
        "sheets": Sheets(seed={"spreadsheets": {"reports": {"rows": []}}}),
        "slack": Slack(seed={"channels": {"#finance": []}}),
        "gmail": Gmail(),
    }
    handed_out: list[tuple[Any, Any]] = []
    for number, (name, operation, arguments) in enumerate(sequence):
        double = doubles[name]
        before = double.snapshot()
        try:
            result = double.invoke(operation, arguments, idempotency_key=f"k{number}")
        except (PreconditionFailed, InvalidArguments):
            assert double.snapshot() == before
            continue
        after = double.snapshot()
        assert after["effects"][:-1] == before["effects"]
        assert after["effects"][-1]["idempotencyKey"] == f"k{number}"
        assert after["effects"][-1]["result"] == result
        handed_out.append((result, copy.deepcopy(result)))
        if name == "sheets":
            rows = double.invoke("listRows", {"spreadsheetId": "reports"})
            handed_out.append((rows, copy.deepcopy(rows)))
    for given_out, as_given in handed_out:
        assert given_out == as_given


def test_a_snapshot_does_not_follow_later_changes() -> None:
    sheets = Sheets(seed={"spreadsheets": {"reports": {"rows": []}}})
    sheets.invoke("appendRow", {"spreadsheetId": "reports", "values": ["a"]}, idempotency_key="k1")
    snapshot = sheets.snapshot()
    sheets.invoke(
        "updateRow",
        {"spreadsheetId": "reports", "rowId": "row-1", "values": ["b"]},
        idempotency_key="k2",
    )
    assert snapshot["spreadsheets"]["reports"]["rows"] == [{"rowId": "row-1", "values": ["a"]}]
    assert len(snapshot["effects"]) == 1
