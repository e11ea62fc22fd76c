"""``keep serve`` exposes /metrics for the console token, like the JSON API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from keep_sdk.console import ConsoleSettings, create_app
from tests.console.server import served
from tests.console.stores import TOKEN, opened, prepare


@pytest.fixture
def client(tmp_path: Path) -> Iterator[httpx.Client]:
    prepared = prepare(tmp_path)
    inst = opened(prepared.url)
    settings = ConsoleSettings(store_url=prepared.url, token=TOKEN, actor="tester")
    try:
        app = create_app(settings, inst)
        with served(app) as base, httpx.Client(base_url=base, timeout=60) as http:
            yield http
    finally:
        inst.close()


def test_metrics_need_the_token(client: httpx.Client) -> None:
    assert client.get("/metrics").status_code == 401
    wrong = client.get("/metrics", headers={"Authorization": "Bearer " + "x" * 32})
    assert wrong.status_code == 401
    assert "keep_runs" not in wrong.text


def test_metrics_with_the_token_are_the_stores_gauges(client: httpx.Client) -> None:
    answer = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    families = {f.name: f.samples for f in text_string_to_metric_families(answer.text)}
    assert [s.value for s in families["keep_store_up"]] == [1.0]
    runs = families["keep_runs"]
    assert runs
    assert all(s.value >= 1 and set(s.labels) == {"workflow", "status"} for s in runs)
    for name in ("keep_parked_runs", "keep_events_pending", "keep_work_due"):
        assert name in families, name
