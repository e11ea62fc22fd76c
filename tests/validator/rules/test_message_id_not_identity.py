import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk import validate
from keep_sdk.validator.rules.message_id_not_identity import NOT_IDENTITY
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "message-id-not-identity"


def publish(message_id: str) -> str:
    return (
        "for (const m of await ctx.gmail.search({})) {\n"
        f"  await ctx.publish('in', {{ messageId: {message_id}, title: `Mail ${{m.id}}`, payload: {{}} }}); // here\n"
        "}\nreturn state;"
    )


def silent(message_id: str) -> str:
    return publish(message_id).replace(" // here", "")


INVALID = [
    Case("sender", workflow(producer=publish("m.from"))),
    Case("sender-and-subject", workflow(producer=publish("`${m.from}-${m.subject}`"))),
    Case("lowercased", workflow(producer=publish("m.from.toLowerCase()"))),
    Case("nested", workflow(producer=publish("m.payload.sender"))),
    Case("concatenated", workflow(producer=publish("'mail:' + m.subject"))),
    Case(
        "in-next",
        workflow(
            next_="await ctx.publish('out', { messageId: prepared.data.status, title: `Done ${prepared.data.id}` }); // here",
            publishes='["out"]',
        ),
    ),
]

VALID = [
    Case("id", workflow(producer=silent("m.id"))),
    Case("prefixed-id", workflow(producer=silent("`${m.from}:${m.id}`"))),
    Case("row-id", workflow(producer=silent("`row:${m.rowId}`"))),
    Case("variable", workflow(producer=silent("key(m)"))),
    Case("time", workflow(producer=silent("`${m.from}@${m.receivedAt}`"))),
    Case("contact-email", workflow(producer=silent("`contact:${m.email}`"))),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


FIELDS = st.sampled_from(sorted(NOT_IDENTITY | {"id", "rowId", "ts", "receivedAt", "uid"}))


@settings(max_examples=60, deadline=None)
@given(st.lists(FIELDS, min_size=1, max_size=3), st.sampled_from(["template", "plus"]))
def test_reported_exactly_when_every_field_of_the_id_repeats_across_items(
    fields: list[str], form: str
) -> None:
    parts = [f"m.{field}" for field in fields]
    expression = (
        "`" + "-".join(f"${{{part}}}" for part in parts) + "`"
        if form == "template"
        else " + ':' + ".join(parts)
    )
    report = validate(workflow(producer=silent(expression)))
    flagged = RULE in report.rules()
    assert flagged == all(field in NOT_IDENTITY for field in fields), expression
