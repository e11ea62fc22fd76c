"""The console in a real browser: ``keep serve`` as a subprocess, headless Chromium driven by
Playwright. A person sees the run waiting for a permission, grants it, watches the run commit
through the live update, resolves a mutation nobody can tell happened, and the store agrees.

Screenshots of each page go to the test's temporary folder (``screenshots/``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from keep_sdk.model import LedgerStatus, RunStatus
from tests.console.stores import TOKEN, Prepared, opened, prepare

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = pytest.mark.slow


def _chromium() -> str:
    if not Path(CHROMIUM).exists():
        if os.environ.get("KEEP_CI"):
            pytest.fail("CI must run the browser tests: .ci/run installs Debian's chromium")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    return CHROMIUM


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def prepared(tmp_path: Path) -> Prepared:
    return prepare(tmp_path)


@pytest.fixture
def console(prepared: Prepared, tmp_path: Path) -> Iterator[str]:
    """``keep serve`` on the prepared store, as a subprocess; yields its base URL."""
    port = _free_port()
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "keep_sdk", "serve", "--store", prepared.url, "--port", str(port)],
        env={**os.environ, "KEEP_CONSOLE_TOKEN": TOKEN},
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if httpx.get(f"{base}/api/openapi.json", timeout=2).status_code == 401:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "keep serve did not answer in 60 s"
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_a_person_grants_and_resolves_in_the_browser(
    console: str, prepared: Prepared, tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=_chromium(), headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{console}/runs")
            expect(page.locator("h1")).to_have_text("Sign in")
            page.goto(f"{console}/login?token={TOKEN}")
            expect(page.locator("h1")).to_have_text("Workflows")
            waiting = page.locator(".waiting-item", has_text="Add invoice from billing@acme")
            expect(waiting.first).to_be_visible()
            page.screenshot(path=shots / "workflows.png", full_page=True)

            page.goto(f"{console}/runs/{prepared.approval_run}")
            expect(page.locator("body")).to_have_attribute("data-live", "on", timeout=15_000)
            status = page.locator(".run-status")
            expect(status).to_have_text("paused:approval")
            page.screenshot(path=shots / "run-waiting.png", full_page=True)
            url = page.url
            page.get_by_role("button", name="Grant sheets.write").click()
            expect(page.locator("#flash")).to_contain_text(
                "granted sheets.write to waiting", timeout=30_000
            )
            expect(status).to_have_text("committed", timeout=30_000)
            assert page.url == url, "the run page updated itself; nobody navigated"
            page.screenshot(path=shots / "run-committed.png", full_page=True)

            page.goto(f"{console}/runs/{prepared.escalated_run}")
            expect(page.locator(".compare")).to_contain_text("The host observed the call")
            expect(page.locator(".compare")).to_contain_text("#finance")
            expect(page.get_by_role("button", name="Ask again whether it happened")).to_have_count(
                0
            )
            page.screenshot(path=shots / "run-escalated.png", full_page=True)
            page.get_by_role("button", name="Skip it").click()
            expect(page.locator("#flash")).to_contain_text("is committed", timeout=30_000)
            expect(page.locator(".run-status")).to_have_text("committed", timeout=30_000)

            for name, path in (
                ("flow", "/workflows/waiting"),
                ("runs", "/runs"),
                ("ledger", "/ledger"),
                ("events", "/events?workflow=waiting"),
            ):
                page.goto(f"{console}{path}")
                expect(page.locator("main")).to_be_visible()
                page.screenshot(path=shots / f"{name}.png", full_page=True)
            expect(page.locator(".event-row").first).to_be_visible()
        finally:
            browser.close()

    inst = opened(prepared.url)
    try:
        assert inst.store.get_run(prepared.approval_run).status is RunStatus.COMMITTED
        entry = inst.store.ledger_entry_for_run(prepared.escalated_run)
        assert entry is not None
        assert entry.status is LedgerStatus.INDETERMINATE
        assert entry.resolved_by is not None
        assert entry.resolved_by.startswith("console:")
        assert inst.store.get_run(prepared.escalated_run).status is RunStatus.COMMITTED
    finally:
        inst.close()
    assert sorted(p.name for p in shots.iterdir()) == [
        "events.png", "flow.png", "ledger.png", "run-committed.png", "run-escalated.png",
        "run-waiting.png", "runs.png", "workflows.png",
    ]  # fmt: skip
