"""Every string from a script or an outside system is shown as text: HTML, ``<script>``,
rich-markup-like ``[/bold]`` and ``[link=…]`` never become markup on any page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from itertools import count

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from keep_sdk.console import ConsoleSettings, create_app
from keep_sdk.stores import Publication
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
