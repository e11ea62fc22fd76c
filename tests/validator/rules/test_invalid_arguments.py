import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "invalid-arguments"

READ = "return { reservations: [], data: {} };"

INVALID = [
    Case(
        "misspelled-key",
        workflow(
            mutate="await ctx.gmail.send({ to: 'a@example.com', subjet: 's', body: 'b' }); // here"
        ),
    ),
    Case(
        "missing-required",
        workflow(mutate="await ctx.gmail.send({ // here\n  to: 'a@example.com', subject: 's' });"),
    ),
    Case(
        "string-for-integer",
        workflow(prepare=f"await ctx.gmail.search({{ query: 'x', limit: '10' }}); // here\n{READ}"),
    ),
    Case(
        "string-for-array",
        workflow(
            mutate="await ctx.sheets.appendRow({ spreadsheetId: 's', values: 'a,b' }); // here"
        ),
    ),
    Case(
        "number-for-string",
        workflow(mutate="await ctx.slack.postMessage({ channel: '#ops', text: 42 }); // here"),
    ),
    Case(
        "through-alias",
        workflow(
            mutate="const { sheets } = ctx;\nawait sheets.appendRow({ sheetId: 's', values: [1] }); // here"
        ),
    ),
    Case(
        "through-helper",
        workflow(
            before="const post = (ctx, text) => ctx.slack.postMessage({ chanel: '#ops', text }); // here",
            mutate="await post(ctx, 'hi');",
        ),
    ),
    Case(
        "quoted-key",
        workflow(prepare=f"await ctx.gmail.getById({{ 'messageId': 'm1' }}); // here\n{READ}"),
    ),
]

VALID = [
    Case(
        "all-required",
        workflow(mutate="await ctx.gmail.send({ to: prepared.data.to, subject: 's', body: 'b' });"),
    ),
    Case("computed-values", workflow(mutate="await ctx.sheets.appendRow(prepared.data.row);")),
    Case(
        "spread-not-checked-for-missing",
        workflow(mutate="await ctx.gmail.send({ ...prepared.data, subject: 's' });"),
    ),
    Case(
        "nullable-optional",
        workflow(prepare=f"await ctx.gmail.search({{ query: null, after: null }});\n{READ}"),
    ),
    Case(
        "template-string",
        workflow(
            mutate="await ctx.slack.postMessage({ channel: '#ops', text: `n=${prepared.data.n}` });"
        ),
    ),
    Case(
        "shorthand-values",
        workflow(
            mutate="const { to, subject, body } = prepared.data;\nawait ctx.gmail.send({ to, subject, body });"
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


def test_message_suggests_the_closest_key() -> None:
    report = INVALID[0].report()
    [diagnostic] = [d for d in report.diagnostics if d.rule == RULE]
    assert "did you mean `subject`?" in diagnostic.message
