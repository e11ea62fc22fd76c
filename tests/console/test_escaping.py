"""Every string from a script or an outside system is shown as text: HTML, ``<script>``,
rich-markup-like ``[/bold]`` and ``[link=…]`` never become markup on any page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from itertools import count
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from keep_sdk.console import ConsoleSettings, create_app
from keep_sdk.stores import Publication
from tests.cli.terminal import ALL_GRANTS, DEMO, SAMPLE, keep
from tests.console.server import served
from tests.console.stores import TOKEN, opened, prepare

BEARER = {"Authorization": f"Bearer {TOKEN}"}

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '"><b>bold</b>',
    "[/bold]",
    "[bold red]",
    "[link=https://evil.example/x]click[/link]",
    "&amp;",
    "{{ 7*7 }}",
    "</td></tr></table>",
    "'",
    "é ✓",
]

titles = (
    st.lists(
        st.one_of(
            st.sampled_from(HOSTILE),
            st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=6),
        ),
        min_size=1,
        max_size=6,
    )
    .map("".join)
    .filter(lambda t: t.strip() == t and t != "")
)


class _Collect(HTMLParser):
    """Text of the elements with class `wanted`, and every tag seen."""

    def __init__(self, wanted: str) -> None:
        super().__init__(convert_charrefs=True)
        self.wanted = wanted
        self.depth = 0
        self.texts: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if self.depth:
            self.depth += 1
        elif self.wanted in (dict(attrs).get("class") or "").split():
            self.depth = 1
            self.texts.append("")

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.texts[-1] += data


def texts(page: str, wanted: str) -> tuple[list[str], list[str]]:
    parser = _Collect(wanted)
    parser.feed(page)
    return parser.texts, parser.tags


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Starlette]:
    prepared = prepare(tmp_path_factory.mktemp("escaping"))
    inst = opened(prepared.url)
    try:
        yield create_app(ConsoleSettings(store_url=prepared.url, token=TOKEN), inst)
    finally:
        inst.close()


@pytest.fixture(scope="module")
def client(app: Starlette) -> Iterator[httpx.Client]:
    with served(app) as base, httpx.Client(base_url=base, headers=BEARER, timeout=60) as http:
        yield http


ids = count()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(title=titles)
def test_event_titles_render_as_text_on_every_page(
    app: Starlette, client: httpx.Client, title: str
) -> None:
    store = app.state.console.installation.store
    store.publish(
        "waiting", Publication(topic="row.added", message_id=f"m{next(ids)}", title=title)
    )
    for path in ("/events?workflow=waiting&topic=row.added&limit=1", "/workflows/waiting?limit=1"):
        page = client.get(path).text
        shown, tags = texts(page, "event-title")
        assert shown[0].strip() == title, path
        assert tags.count("script") == 2, "only the console's own two scripts"
        assert "img" not in tags
        assert "b" not in tags
        assert not re.search(r"<script>alert|<img src=x|<b>bold", page)


def test_a_hostile_title_in_the_ledger_and_flow_is_text(
    app: Starlette, client: httpx.Client
) -> None:
    store = app.state.console.installation.store
    hostile = "<script>alert('x')</script>[/bold][link=https://evil.example]"
    store.publish(
        "escalated", Publication(topic="invoice.received", message_id="hostile", title=hostile)
    )
    page = client.get("/workflows/escalated").text
    shown, tags = texts(page, "event-title")
    assert hostile in [t.strip() for t in shown]
    assert tags.count("script") == 2
    assert "<script>alert" not in page
    assert "[/bold][link=https://evil.example]" in page


def test_outside_text_in_ui_titles_params_and_results_is_text_on_the_ledger(
    tmp_path: Path,
) -> None:
    """A sender that a script copies into its ui.title and the call's parameters."""
    sender = "<script>alert(1)</script>[/bold][link=https://evil.example]x@y.example"
    seed = json.loads(SAMPLE.read_text())
    seed["gmail"]["messages"] = [
        {
            "id": "m-1", "from": sender, "to": "finance@example.com",
            "subject": "Invoice <b>1</b>", "body": "Amount due: 5.00 EUR.",
            "receivedAt": "2026-11-21T08:12:00Z",
        }
    ]  # fmt: skip
    seed_file = tmp_path / "seed.json"
    seed_file.write_text(json.dumps(seed))
    url = f"sqlite:///{tmp_path / 'keep.db'}"
    done = keep(
        "run", str(DEMO), "--store", url, "--seed", str(seed_file), "--until-idle",
        "--isolation", "in-process", *ALL_GRANTS,
    )  # fmt: skip
    assert done.code == 0, done.err
    inst = opened(url)
    try:
        app = create_app(ConsoleSettings(store_url=url, token=TOKEN), inst)
        with served(app) as base, httpx.Client(base_url=base, headers=BEARER) as http:
            for path in ("/ledger", "/workflows/invoices", "/"):
                page = http.get(path).text
                _, tags = texts(page, "none")
                assert tags.count("script") == 2, path
                assert "b" not in tags, path
                assert "<script>alert" not in page, path
            ledger = http.get("/ledger").text
            assert "Add invoice from &lt;script&gt;alert(1)&lt;/script&gt;[/bold]" in ledger
    finally:
        inst.close()


def test_control_characters_and_bidi_overrides_are_shown_as_escapes(
    app: Starlette, client: httpx.Client
) -> None:
    """Issue 31: HTML escaping leaves a right-to-left override and raw controls alone."""
    store = app.state.console.installation.store
    title = "Invoice \x1b[31mPAID \u202egnp.exe\u2067x\u2069\x85"
    store.publish("waiting", Publication(topic="row.added", message_id="ctl", title=title))
    for path in ("/events?workflow=waiting&topic=row.added&limit=1", "/workflows/waiting?limit=1"):
        page = client.get(path).text
        for raw in ("\x1b", "\u202e", "\u2067", "\u2069", "\x85"):
            assert raw not in page, (path, raw)
        shown, _ = texts(page, "event-title")
        assert shown[0].strip() == "Invoice \\x1b[31mPAID \\u202egnp.exe\\u2067x\\u2069\\x85"
