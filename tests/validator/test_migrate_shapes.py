"""`keep migrate` never changes meaning silently: result shapes, Gmail queries, old argument forms.

Each row is an original snippet inside a producer; the migrated handler must contain
the rewritten use, or carry a `TODO(migrate): review:` at the use naming both shapes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.cli import cli
from keep_sdk.connectors.builtin._gmail import _matches
from keep_sdk.validator.migrate import migrate
from keep_sdk.validator.migrate._query import translate_gmail_query

LIST = 'Gmail.api({ method: "users.messages.list", q: "invoice" })'
GET = 'GoogleSheets.api({ method: "spreadsheets.values.get", spreadsheetId: "s" })'


def handler(body: str) -> str:
    return (
        "const workflow = {\n  topics: { t: {} },\n  producers: {\n    p: {\n"
        '      publishes: ["t"],\n      handler: async (state) => {\n'
        + body
        + "\n        return state;\n      },\n    },\n  },\n};\n"
    )


def migrated(body: str) -> tuple[str, list[str]]:
    migration = migrate(handler(body))
    return migration.source, [n.message for n in migration.notes if n.review]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (f"const list = await {LIST};\nfor (const m of list.messages || []) f(m.id);", "of list)"),
        (f"const list = await {LIST};\nconst n = (list.messages ?? []).length;", "(list).length"),
        (f"const list = await {LIST};\nconst ms = list?.messages;", "const ms = list;"),
        (f"const {{ messages }} = await {LIST};", "const messages = await ctx.gmail.search("),
        (f"const {{ messages = [] }} = await {LIST};", "const messages = await ctx.gmail"),
        (f"const {{ messages: found }} = await {LIST};", "const found = await ctx.gmail"),
        (f"for (const m of (await {LIST}).messages || []) f(m);", "of (await ctx.gmail.search("),
        (f"const res = await {GET};\nconst rows = res.values;", "rows = res.map((r) => r.values);"),
        (
            f"const res = await {GET};\nconst rows = res.values || [];",
            "= res.map((r) => r.values);",
        ),
        (f"const {{ values }} = await {GET};", '"s" })).map((r) => r.values);'),
        (f"const rows = (await {GET}).values;", '"s" })).map((r) => r.values);'),
    ],
)
def test_a_use_whose_translation_is_certain_is_rewritten(body: str, expected: str) -> None:
    source, reviews = migrated(body)
    assert expected in source
    assert reviews == []
    assert ".messages" not in source
    assert ".values;" not in source.replace("r.values", "")


@pytest.mark.parametrize(
    ("body", "old"),
    [
        (f"const list = await {LIST};\nconst more = list.nextPageToken;", "{messages: [{id"),
        (f"const list = await {LIST};\nkeep(list);", "{messages: [{id"),
        (f"const res = await {GET};\nconst first = res.values[0][0];\nuse(res);", "{range, values"),
        (f"const {{ values, range }} = await {GET};", "{range, values"),
        (
            'const m = await Gmail.api({ method: "users.messages.get", id: "x" });\n'
            "const s = m.payload.headers[0].value;",
            "payload: {headers",
        ),
        (f"return await {LIST};", "{messages: [{id"),
    ],
)
def test_any_other_use_gets_a_review_todo_with_both_shapes(body: str, old: str) -> None:
    source, reviews = migrated(body)
    assert reviews, source
    assert all(old in message and "is now" in message for message in reviews)
    lines = source.split("\n")
    for number, line in enumerate(lines):
        if "TODO(migrate): review:" in line:
            assert lines[number + 1].strip(), "the TODO stands right above the use"


def test_a_use_of_the_id_alone_is_left_as_it_is() -> None:
    body = 'const m = await Gmail.api({ method: "users.messages.get", id: "x" });\nf(m.id);'
    source, reviews = migrated(body)
    assert reviews == []
    assert "f(m.id);" in source


@pytest.mark.parametrize(
    ("query", "translated", "lost"),
    [
        ("subject:invoice is:unread", "invoice", ("is:unread",)),
        ("from:billing@acme.example invoice", "from:billing@acme.example invoice", ()),
        ('subject:"monthly report"', "monthly report", ()),
        ("invoice -draft label:work", "invoice", ("-draft", "label:work")),
        ("a OR b", "a b", ("OR",)),
        ("newer_than:2d has:attachment", "", ("newer_than:2d", "has:attachment")),
    ],
)
def test_gmail_queries_translate_or_name_what_is_lost(
    query: str, translated: str, lost: tuple[str, ...]
) -> None:
    result = translate_gmail_query(query)
    assert (result.query, result.lost) == (translated, lost)


WORD = st.text(alphabet="abcxyz", min_size=1, max_size=4)
TERM = st.one_of(
    WORD,
    WORD.map(lambda w: f"subject:{w}"),
    WORD.map(lambda w: f"from:{w}"),
    WORD.map(lambda w: f"is:{w}"),
    WORD.map(lambda w: f"-{w}"),
)
MESSAGE = st.fixed_dictionaries(
    {"from": WORD, "to": WORD, "subject": st.lists(WORD, max_size=3).map(" ".join), "body": WORD}
)


@settings(max_examples=80, deadline=None)
@given(st.lists(TERM, max_size=5), MESSAGE)
def test_a_translated_query_with_nothing_lost_finds_every_message_the_original_found(
    terms: list[str], message: dict[str, str]
) -> None:
    """Gmail semantics: every term must hold (subject:x in the subject, from:x in the sender)."""
    result = translate_gmail_query(" ".join(terms))
    if result.lost:
        assert all(t in terms for t in result.lost)
        return
    fields = {"subject": message["subject"], "from": message["from"]}
    everywhere = " ".join(message.values())
    gmail_finds = all(
        (t.split(":", 1)[1] in fields[t.split(":", 1)[0]]) if ":" in t else t in everywhere
        for t in terms
    )
    if gmail_finds:
        assert _matches(message, result.query)


def test_params_and_request_body_are_read_and_a_single_row_is_unwrapped() -> None:
    body = (
        'await GoogleSheets.api({ method: "spreadsheets.values.append", account: "a@b.c", '
        'params: { spreadsheetId: "s", range: "A1", valueInputOption: "RAW" }, '
        "requestBody: { values: [[1, 2]] } });"
    )
    migration = migrate(handler(body))
    assert 'ctx.sheets.appendRow({ spreadsheetId: "s", values: [1, 2] })' in migration.source
    assert any("dropped" in n.message and "`range`" in n.message for n in migration.notes)


def test_several_rows_at_once_are_left_for_a_person() -> None:
    body = (
        'await GoogleSheets.api({ method: "spreadsheets.values.append", spreadsheetId: "s", '
        "requestBody: { values: [[1], [2]] } });"
    )
    migration = migrate(handler(body))
    assert "GoogleSheets.api" in migration.source
    assert any("once per row" in n.message and not n.review for n in migration.notes)


@pytest.mark.parametrize(
    ("sheet_range", "offset", "review"),
    [("A2:C", "offset: 1", False), ("Sheet1!A:A", None, False), ("B5:C", "offset: 4", True)],
)
def test_a_range_becomes_an_offset_and_a_moved_column_is_flagged(
    sheet_range: str, offset: str | None, review: bool
) -> None:
    body = (
        'const r = await GoogleSheets.api({ method: "spreadsheets.values.get", '
        f'spreadsheetId: "s", range: "{sheet_range}" }});'
    )
    source, reviews = migrated(body)
    assert (offset in source) if offset else ("offset" not in source)
    assert bool(reviews) == review


def test_cli_exits_1_and_says_so_when_a_review_todo_is_left(tmp_path: Path) -> None:
    script = tmp_path / "old.js"
    script.write_text(handler(f"const list = await {LIST};\nsend(list);"))
    result = CliRunner().invoke(cli, ["migrate", str(script)])
    assert result.exit_code == 1
    assert "TODO(migrate) review(s) left" in result.stderr
    assert "TODO(migrate): review:" in result.stdout


def test_a_use_inside_another_rewritten_call_gets_a_review_todo_and_the_others_are_rewritten() -> (
    None
):
    body = (
        f"const list = await {LIST};\n"
        "await Topics.publish({ topic: 't', event: { messageId: 'a', payload: list.messages } });\n"
        "for (const m of list.messages || []) f(m);"
    )
    source, reviews = migrated(body)
    assert (
        "ctx.publish('t', { title: `t ${'a'}`, messageId: 'a', payload: list.messages })" in source
    )
    assert "for (const m of list) f(m);" in source
    assert len(reviews) == 1
    assert migrate(source).source == source


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (
            "{ messageId: m.id, payload: {} }",
            "{ title: `t ${m.id}`, messageId: m.id, payload: {} }",
        ),
        ("{}", "{ title: `t` }"),
        ("{ title: 'x', messageId: m.id }", "{ title: 'x', messageId: m.id }"),
        ("e", "ctx.publish('t', e)"),
    ],
)
def test_an_event_without_a_title_gets_one_from_its_topic_and_id(event: str, expected: str) -> None:
    source, _ = migrated(f"await Topics.publish({{ topic: 't', event: {event} }});")
    assert expected in source


def test_a_publish_to_several_topics_becomes_one_statement_per_topic() -> None:
    body = "await Topics.publish({ topic: ['a', 'b'], event: { messageId: m.id, title: 'x' } });"
    source, _ = migrated(body)
    assert "await ctx.publish('a', { messageId: m.id, title: 'x' });" in source
    assert "await ctx.publish('b', { messageId: m.id, title: 'x' });" in source
    kept, _ = migrated("await Topics.publish({ topic: ['a', 'b'], event: make(m) });")
    assert "TODO(migrate): publish to one topic per call" in kept


HELPER = "async function latest(topic) {\n  return Topics.peek({ topic, limit: 1 });\n}\n"


def test_a_helper_called_only_from_handlers_takes_ctx_and_is_passed_it() -> None:
    migration = migrate(HELPER + handler("const e = await latest('t');\nconst f = await latest();"))
    assert "async function latest(ctx, topic) {" in migration.source
    assert "return ctx.peek(topic, { limit: 1 });" in migration.source
    assert "await latest(ctx, 't');" in migration.source
    assert "await latest(ctx);" in migration.source
    assert not any(note.todo for note in migration.notes)


@pytest.mark.parametrize(
    "use",
    ["const pick = latest;", "await Topics.publish({ topic: 't', event: await latest('t') });"],
)
def test_a_helper_used_otherwise_is_left_with_its_todo(use: str) -> None:
    migration = migrate(HELPER + handler(use))
    assert "async function latest(topic) {" in migration.source
    assert any("outside a handler" in note.message for note in migration.notes)
