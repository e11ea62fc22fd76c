"""docs/durable.md end to end through the CLI: run, publish, status, notify, commit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.terminal import keep

DOC = Path(__file__).parents[2] / "docs" / "durable.md"


def example() -> str:
    text = DOC.read_text()
    return re.search(r"```js\n(.*?)```", text, re.S).group(1)  # type: ignore[union-attr]


@pytest.fixture
def installed(tmp_path: Path) -> tuple[Path, str]:
    script = tmp_path / "document-request.js"
    script.write_text(example())
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    done = keep(
        "run", str(script), "--store", store, "--grant", "approvals.request",
        "--until-idle", "--isolation", "in-process",
    )  # fmt: skip
    assert done.code == 0, done.err
    return script, store


def request(script: Path, store: str, case: str) -> None:
    done = keep(
        "publish", "document.needed", "--message-id", case,
        "--title", f"{case}: Ann must send a passport",
        "--payload", json.dumps({"client": "ann@example.com", "document": "passport"}),
        "--store", store,
    )  # fmt: skip
    assert done.code == 0, done.err
    ran = keep("run", str(script), "--store", store, "--until-idle", "--isolation", "in-process")
    assert ran.code == 0, ran.err


def waiting(store: str) -> list[dict[str, object]]:
    status = json.loads(keep("status", "--store", store, "--json").out)
    [workflow] = status["workflows"]
    return list(workflow["waiting"])


def test_document_request_waits_for_a_person_and_commits_on_notify(
    installed: tuple[Path, str], tmp_path: Path
) -> None:
    script, store = installed
    request(script, store, "case-7")
    [wait] = waiting(store)
    assert "waits for ctx.approvals.request to be notified until" in str(wait["why"])
    key = re.search(r"kc-[0-9a-f]{40}", str(wait["why"])).group(0)  # type: ignore[union-attr]
    assert f"keep notify {key} --result JSON --store {store}" in wait["commands"]
    text = keep("status", "--store", store).out
    assert "Ask ann@example.com for their passport" in text
    [run] = json.loads(keep("runs", "--store", store, "--json").out)
    assert (run["status"], run["phase"]) == ("paused:waiting", "mutating")

    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"file": "passport.pdf"}))
    done = keep("notify", key, "--result", f"@{answer}", "--store", store, "--isolation",
                "in-process")  # fmt: skip
    assert done.code == 0, done.err
    assert "delivered; run" in done.out
    assert "is committed" in done.out
    assert waiting(store) == []
    shown = keep("runs", run["id"], "--store", store)
    assert shown.code == 0, shown.err
    assert "durable ctx.approvals.request completed" in shown.out
    assert "start: pending" in shown.out
    assert "notification: applied" in shown.out
    detail = json.loads(keep("runs", run["id"], "--store", store, "--json").out)
    assert [a["outcome"] for a in detail["attempts"]] == ["pending", "applied"]
    assert detail["invocation"]["correlationKey"] == key
    events = json.loads(keep("events", "--store", store, "--json").out)
    received = [e for e in events if e["topic"] == "document.received"]
    assert [e["payload"] for e in received] == [{"file": "passport.pdf"}]
    assert {e["status"] for e in events if e["topic"] == "document.needed"} == {"consumed"}

    again = keep("notify", key, "--result", '{"file": "other.pdf"}', "--store", store)
    assert again.code == 1
    assert "duplicate" in again.err
    events_after = json.loads(keep("events", "--store", store, "--json").out)
    assert events_after == events


@pytest.mark.parametrize(
    ("key", "result", "code", "message"),
    [
        ("not-a-key", "{}", 2, "malformed correlation key"),
        ("kc-" + "0" * 40, "{oops", 2, "not valid JSON"),
        ("kc-" + "0" * 40, "{}", 1, "no durable invocation has correlation key"),
        ("kc-" + "0" * 40, "@no-such-answer.json", 2, "no-such-answer.json"),
    ],
)
def test_bad_notifications_are_refused_and_change_nothing(
    installed: tuple[Path, str], key: str, result: str, code: int, message: str
) -> None:
    script, store = installed
    request(script, store, "case-8")
    before = keep("runs", "--store", store, "--json").out
    done = keep("notify", key, "--result", result, "--store", store)
    assert done.code == code, (done.out, done.err)
    assert message in done.err
    assert "Traceback" not in done.err
    assert keep("runs", "--store", store, "--json").out == before


def test_cancel_ends_the_run_and_a_late_notification_changes_nothing(
    installed: tuple[Path, str],
) -> None:
    script, store = installed
    request(script, store, "case-9")
    [wait] = waiting(store)
    key = re.search(r"kc-[0-9a-f]{40}", str(wait["why"])).group(0)  # type: ignore[union-attr]
    done = keep("cancel", str(wait["runId"]), "--store", store, "--isolation", "in-process")
    assert done.code == 0, done.err
    assert "is committed" in done.out
    events = json.loads(keep("events", "--store", store, "--json").out)
    assert [e["status"] for e in events] == ["skipped"]
    late = keep("notify", key, "--result", "{}", "--store", store)
    assert late.code == 1
    assert "ignored" in late.err
    assert json.loads(keep("events", "--store", store, "--json").out) == events
