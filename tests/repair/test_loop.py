"""check() and repair(): one verdict from the validator, cases, replay and permissions,
and a loop that calls a fixer until the verdict is ok."""

from __future__ import annotations

from pathlib import Path

import pytest

from keep_sdk.errors import ConfigurationError
from keep_sdk.repair import Verdict, check, repair
from keep_sdk.stores import open_store

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo"
SCRIPT = (DEMO / "invoices.js").read_text()
CASES = DEMO / "invoices.keep.yaml"
TYPO = SCRIPT.replace("await ctx.sheets.appendRow", "await ctx.sheets.apendRow")
SWAPPED = SCRIPT.replace("invoice.subject, invoice.amount]", "invoice.amount, invoice.subject]")
SEND = SCRIPT.replace(
    'await ctx.slack.postMessage({ channel: "#finance", text: prepared.data.text });',
    'await ctx.gmail.send({ to: "finance@example.com", subject: "Invoices", '
    "body: prepared.data.text });",
)


def test_the_demo_with_its_cases_is_ok() -> None:
    verdict = check(SCRIPT, cases=CASES, deployed=SCRIPT)
    assert verdict.ok
    assert verdict.problems == 0
    assert verdict.cases is not None
    assert all(c.ok for c in verdict.cases)
    assert verdict.operations == ["gmail.search", "sheets.appendRow", "slack.postMessage"]
    assert verdict.render().startswith("# Verdict: ok")


def test_a_validator_error_is_rendered_with_its_hint_rule_and_the_connector_reference() -> None:
    verdict = check(TYPO, cases=CASES)
    assert not verdict.ok
    assert verdict.cases is None
    prompt = verdict.render()
    assert "[unknown-operation]" in prompt
    assert "did you mean `appendRow`?" in prompt
    assert "`unknown-operation`:" in prompt
    assert "### `ctx.sheets.appendRow({spreadsheetId, values})`" in prompt
    assert "```js\n" + TYPO.rstrip() + "\n```" in prompt


def test_a_failing_case_and_a_new_permission_are_problems() -> None:
    verdict = check(SWAPPED, cases=CASES)
    assert not verdict.ok
    assert "## Failing cases" in verdict.render()
    assert '-        "Invoice INV-1",' in verdict.render()
    needs = check(SEND, deployed=SCRIPT)
    assert not needs.ok
    assert needs.permissions is not None
    assert needs.permissions.new_permissions == ["gmail.send"]
    assert "The deployed version does not need gmail.send" in needs.render()


def test_replay_feeds_the_verdict(tmp_path: Path) -> None:
    from tests.repair.test_replay import GRANTS, keep

    url = f"sqlite:///{tmp_path / 'keep.db'}"
    code, _, err = keep("run", str(DEMO / "invoices.js"), "--store", url, "--seed",
                        str(DEMO / "sample-data.json"), *GRANTS, "--until-idle")  # fmt: skip
    assert code == 0, err
    store = open_store(url)
    try:
        same = check(SCRIPT, replay=store)
        changed = check(SCRIPT.replace('"#finance"', '"#accounting"'), replay=store)
    finally:
        store.close()
    assert same.ok
    assert same.replay is not None
    assert same.replay.counts == {"same": 5}
    assert not changed.ok
    assert '+    "channel": "#accounting",' in changed.render()


def test_repair_stops_at_the_first_clean_round_and_keeps_every_round() -> None:
    seen: list[Verdict] = []

    def fixer(verdict: Verdict) -> str:
        seen.append(verdict)
        return [SWAPPED, SCRIPT][len(seen) - 1]

    result = repair(TYPO, fixer, cases=CASES)
    assert result.ok
    assert result.source == SCRIPT
    assert [r.verdict.ok for r in result.rounds] == [False, False, True]
    assert [v.source for v in seen] == [TYPO, SWAPPED]


def test_a_fix_that_makes_things_worse_does_not_win() -> None:
    worse = TYPO.replace("ctx.slack.postMessage", "ctx.slack.postMesage")

    def fixer(verdict: Verdict) -> str:
        return worse

    result = repair(TYPO, fixer, max_rounds=2)
    assert not result.ok
    assert len(result.rounds) == 3
    assert result.rounds[1].verdict.problems > result.rounds[0].verdict.problems
    assert result.source == TYPO


def test_zero_rounds_only_checks() -> None:
    result = repair(TYPO, lambda v: pytest.fail("no fix asked"), max_rounds=0)
    assert [r.number for r in result.rounds] == [0]
    with pytest.raises(ConfigurationError):
        repair(TYPO, lambda v: SCRIPT, max_rounds=-1)
