"""keep diff: topics, handlers, schedules, subscriptions, operations per phase, permissions;
and a deployed version that needs a new permission pauses for approval."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from keep_sdk.cli import cli
from keep_sdk.model import RunStatus
from keep_sdk.plugins import KeepPlugins
from keep_sdk.repair.surface import diff_surfaces, surface_of
from tests.runtime.harness import MAIL_TO_SHEET, make_env

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo"
SCRIPT = (DEMO / "invoices.js").read_text()
SEND = SCRIPT.replace(
    'await ctx.slack.postMessage({ channel: "#finance", text: prepared.data.text });',
    'await ctx.gmail.send({ to: "finance@example.com", subject: "Invoices", '
    "body: prepared.data.text });",
)
GRANTS = ("--grant", "gmail.read", "--grant", "sheets.write", "--grant", "slack.write")


def keep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_the_same_script_has_no_difference(tmp_path: Path) -> None:
    code, out, _ = keep("diff", str(DEMO / "invoices.js"), str(DEMO / "invoices.js"))
    assert code == 0
    assert "no difference" in out


def test_a_new_operation_shows_per_phase_and_its_permission_fails_the_gate(
    tmp_path: Path,
) -> None:
    (tmp_path / "new.js").write_text(SEND)
    code, out, _ = keep("diff", str(DEMO / "invoices.js"), str(tmp_path / "new.js"), "--json")
    assert code == 1
    diff = json.loads(out)
    assert diff["newPermissions"] == ["gmail.send"]
    assert diff["droppedPermissions"] == ["slack.write"]
    [change] = diff["handlersChanged"]
    assert change["name"] == "postSummary"
    assert change["changes"]["operations"]["new"]["mutate"] == ["gmail.send"]
    code, out, _ = keep("diff", str(DEMO / "invoices.js"), str(tmp_path / "new.js"))
    assert "mutate: + gmail.send" in out
    assert "needs new permissions: gmail.send" in out


def test_topics_schedules_subscriptions_and_handlers_are_compared() -> None:
    manifest = KeepPlugins(load_entry_points=False).manifest()
    new = (
        SCRIPT.replace('interval: "5m"', 'interval: "10m"')
        .replace('"row.added": {},', '"row.added": {},\n    "audit.logged": {},')
        .replace(
            'postSummary: Keep.consumer({\n      subscribe: ["row.added"],',
            'postSummary: Keep.consumer({\n      subscribe: ["row.added", "audit.logged"],',
        )
    )
    diff = diff_surfaces(
        surface_of(SCRIPT, connectors=manifest), surface_of(new, connectors=manifest)
    )
    assert diff.topics_added == ["audit.logged"]
    changed = {c.name: c.changes for c in diff.handlers_changed}
    assert changed["pollInbox"]["schedule"].old == "5m"
    assert changed["pollInbox"]["schedule"].new == "10m"
    assert changed["postSummary"]["subscribe"].new == ["row.added", "audit.logged"]
    assert not diff.new_permissions
    removed = surface_of(SCRIPT.replace("pollInbox", "pollMailbox"), connectors=manifest)
    renamed = diff_surfaces(surface_of(SCRIPT, connectors=manifest), removed)
    assert (renamed.handlers_added, renamed.handlers_removed) == (["pollMailbox"], ["pollInbox"])


def test_deployed_versions_are_compared_from_the_store(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    assert keep("run", str(DEMO / "invoices.js"), "--store", store, *GRANTS, "--until-idle")[0] == 0
    (tmp_path / "new.js").write_text(SEND)
    code, out, _ = keep("diff", "invoices", str(tmp_path / "new.js"), "--store", store, "--json")
    assert code == 1
    assert json.loads(out)["newPermissions"] == ["gmail.send"]
    code, _, err = keep("diff", "invoices@7", str(tmp_path / "new.js"), "--store", store)
    assert code == 2
    assert "has no version 7" in err


def test_a_new_version_needing_a_new_permission_pauses_and_inherits_no_grant() -> None:
    env = make_env("memory://")
    sending = MAIL_TO_SHEET.replace(
        'await ctx.sheets.appendRow({\n          spreadsheetId: "reports",\n'
        "          values: [prepared.data.from, prepared.data.subject],\n        });",
        'await ctx.gmail.send({ to: prepared.data.from, subject: "Thanks", body: "ok" });',
    ).replace("Row ${mutationResult.result.rowId} for", "Thanked")
    assert sending != MAIL_TO_SHEET
    assert env.runtime.deploy(sending) == 2
    assert "gmail.send" not in env.store.get_workflow("mail-to-sheet").grants
    env.publish("m1")
    run = env.runtime.run_consumer("mail-to-sheet", "appendRow")
    assert run.status is RunStatus.PAUSED_APPROVAL
    assert run.waiting_permission == "gmail.send"
    assert env.gmail.effects() == []
