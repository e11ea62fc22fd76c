"""keep replay: a new version against the recorded traces of the demo workflow's runs."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from keep_sdk.cli import cli

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo"
SCRIPT = (DEMO / "invoices.js").read_text()
GRANTS = ("--grant", "gmail.read", "--grant", "sheets.write", "--grant", "slack.write")


def keep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of the demo workflow run on its sample data (5 committed runs)."""
    folder = tmp_path_factory.mktemp("recorded")
    url = f"sqlite:///{folder / 'keep.db'}"
    code, _, err = keep("run", str(DEMO / "invoices.js"), "--store", url, "--seed",
                        str(DEMO / "sample-data.json"), *GRANTS, "--until-idle")  # fmt: skip
    assert code == 0, err
    return folder


@pytest.fixture
def store(recorded: Path, tmp_path: Path) -> str:
    copy = tmp_path / "store"
    shutil.copytree(recorded, copy)
    return f"sqlite:///{copy / 'keep.db'}"


def _replay(store: str, tmp_path: Path, source: str, *extra: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    script = tmp_path / "new.js"
    script.write_text(source)
    code, out, err = keep("replay", str(script), "--store", store, "--json", *extra)
    return code, (json.loads(out) if out.strip() else {}), err


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_the_same_script_replays_every_run_as_same_and_writes_nothing(
    store: str, tmp_path: Path
) -> None:
    folder = Path(store.removeprefix("sqlite:///")).parent
    before = _digest(folder)
    code, summary, _ = _replay(store, tmp_path, SCRIPT)
    assert code == 0
    assert summary["counts"] == {"same": 5}
    assert summary["ok"] is True
    assert {r["handler"] for r in summary["runs"]} == {"pollInbox", "addRow", "postSummary"}
    assert _digest(folder) == before


def test_a_changed_recipient_is_changed_with_the_argument_diff(store: str, tmp_path: Path) -> None:
    source = SCRIPT.replace('channel: "#finance"', 'channel: "#accounting"')
    code, summary, _ = _replay(store, tmp_path, source)
    assert code == 1
    assert summary["counts"] == {"same": 4, "changed": 1}
    [changed] = [r for r in summary["runs"] if r["outcome"] == "changed"]
    assert changed["handler"] == "postSummary"
    [difference] = changed["differences"]
    assert difference["what"] == "mutation"
    assert difference["recorded"]["arguments"]["channel"] == "#finance"
    assert difference["replayed"]["arguments"]["channel"] == "#accounting"
    assert '-    "channel": "#finance",' in difference["diff"]
    assert '+    "channel": "#accounting",' in difference["diff"]
    code, out, _ = keep("replay", str(tmp_path / "new.js"), "--store", store)
    assert code == 1
    assert "changed" in out
    assert "1 changed, 4 same" in out


def test_an_added_read_is_unreplayable_and_never_called(store: str, tmp_path: Path) -> None:
    source = SCRIPT.replace(
        'const [invoice] = await ctx.peek("invoice.received", { limit: 1 });',
        'const [invoice] = await ctx.peek("invoice.received", { limit: 1 });\n'
        '        await ctx.sheets.listRows({ spreadsheetId: "invoices" });',
    )
    code, summary, _ = _replay(store, tmp_path, source)
    assert code == 0
    assert summary["counts"] == {"same": 2, "unreplayable": 3}
    for run in summary["runs"]:
        if run["outcome"] == "unreplayable":
            assert run["handler"] == "addRow"
            assert (
                'ctx.sheets.listRows({"spreadsheetId": "invoices"}) is not in the recorded'
                in (run["error"])
            )


def test_a_script_that_needs_gmail_send_reports_the_new_permission(
    store: str, tmp_path: Path
) -> None:
    source = SCRIPT.replace(
        'await ctx.slack.postMessage({ channel: "#finance", text: prepared.data.text });',
        'await ctx.gmail.send({ to: "finance@example.com", subject: "Invoices", '
        "body: prepared.data.text });",
    )
    code, summary, _ = _replay(store, tmp_path, source)
    assert code == 1
    assert summary["newPermissions"] == ["gmail.send"]
    [failing] = [r for r in summary["runs"] if r["outcome"] == "would-fail"]
    assert failing["newPermissions"] == ["gmail.send"]
    assert "gmail.send" in failing["error"]


def test_a_script_that_throws_would_fail_with_the_error(store: str, tmp_path: Path) -> None:
    source = SCRIPT.replace(
        "const invoice = prepared.data;\n        await ctx.publish(",
        'const invoice = prepared.data;\n        throw new Error("boom");\n'
        "        await ctx.publish(",
    )
    assert source != SCRIPT
    code, summary, _ = _replay(store, tmp_path, source)
    assert code == 1
    failing = [r for r in summary["runs"] if r["outcome"] == "would-fail"]
    assert len(failing) == 3
    assert all("boom" in r["error"] for r in failing)


def test_since_and_limit_choose_the_runs(store: str, tmp_path: Path) -> None:
    code, summary, _ = _replay(store, tmp_path, SCRIPT, "--limit", "2")
    assert [r["handler"] for r in summary["runs"]] == ["addRow", "postSummary"]
    code, summary, _ = _replay(store, tmp_path, SCRIPT, "--since", "2999-01-01")
    assert summary["runs"] == []
    code, _, err = _replay(store, tmp_path, SCRIPT, "--since", "yesterday")
    assert code == 2
    assert "--since" in err


def test_a_store_without_the_workflow_is_one_clear_message(store: str, tmp_path: Path) -> None:
    code, _, err = _replay(store, tmp_path, SCRIPT, "--workflow", "invoice")
    assert code == 2
    assert err.strip() == (
        "error: the store holds no workflow 'invoice'; did you mean 'invoices'? "
        "workflows recorded there: invoices"
    )
    missing = f"sqlite:///{tmp_path / 'none' / 'keep.db'}"
    code, _, err = _replay(missing, tmp_path, SCRIPT)
    assert code == 2
    assert "there is no keep store" in err
    assert not (tmp_path / "none").exists()
