"""`PersonActions.resolve`: one dispatch of a person's choice, used by ``keep resolve`` and the
console alike, with the same effect as the action it names."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from keep_sdk.app import Installation
from keep_sdk.cli.support import actor as cli_actor
from keep_sdk.connectors.builtin import FaultKind
from keep_sdk.console import ConsoleSettings, create_app
from keep_sdk.errors import ActionRefused
from keep_sdk.model import LedgerStatus, RunRecord, RunStatus
from keep_sdk.runtime import PersonActions, ResolveChoice, resolve_choices
from tests.cli.terminal import keep
from tests.console.server import served
from tests.console.stores import TOKEN, opened
from tests.runtime.harness import Env, make_env
from tests.runtime.test_failures import SLACK_SOURCE

Setup = Callable[[str], tuple[Env, str]]
Method = Callable[[PersonActions, str, str], RunRecord]


def _run(env: Env) -> RunRecord:
    return env.runtime.run_consumer("mail-to-sheet", "appendRow")


def escalated(store_url: str) -> tuple[Env, str]:
    """A run paused because nobody can tell whether its chat post happened (cannot reconcile)."""
    env = make_env(store_url, source=SLACK_SOURCE)
    env.publish("m1")
    env.slack.faults.inject(FaultKind.TIMEOUT_BEFORE_EFFECT, operation="postMessage")
    paused = _run(env)
    assert paused.status is RunStatus.PAUSED_RECONCILIATION
    return env, paused.id


def escalated_reconcilable(store_url: str) -> tuple[Env, str]:
    """A run paused after its row's reconcile attempts ran out; the sheet answers again."""
    env = make_env(store_url)
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.TIMEOUT_AFTER_EFFECT, operation="appendRow")
    env.sheets.faults.inject(FaultKind.TRANSIENT, operation="reconcile:appendRow", times=None)
    paused = _run(env)
    entry = env.store.list_ledger()[0]
    for _ in range(5):
        env.clock.advance(120)
        entry = env.runtime.reconcile(entry.id)
    assert entry.status is LedgerStatus.INDETERMINATE
    env.sheets.faults.clear()
    return env, paused.id


def failed(store_url: str) -> tuple[Env, str]:
    """A run that failed on a definite failure of its row."""
    env = make_env(store_url)
    env.publish("m1")
    env.sheets.faults.inject(FaultKind.FAILURE, operation="appendRow", times=1)
    run = _run(env)
    assert run.status is RunStatus.FAILED_LOGIC
    return env, run.id


def committed(store_url: str) -> tuple[Env, str]:
    """A run that committed: nothing to resolve."""
    env = make_env(store_url)
    env.publish("m1")
    run = _run(env)
    assert run.status is RunStatus.COMMITTED
    return env, run.id


def _retry(a: PersonActions, run_id: str, who: str) -> RunRecord:
    return a.retry(run_id, actor=who)


def _try_again(a: PersonActions, run_id: str, who: str) -> RunRecord:
    return a.try_again(run_id, actor=who)


def _didnt_happen(a: PersonActions, run_id: str, who: str) -> RunRecord:
    return a.didnt_happen(run_id, actor=who)


def _skip(a: PersonActions, run_id: str, who: str) -> RunRecord:
    return a.skip(run_id, actor=who)


def outcome(env: Env, ended: RunRecord, original: str) -> tuple[Any, ...]:
    """What a person sees after an action, without the ids that differ between stores."""
    return (
        ended.status,
        ended.phase,
        ended.handler,
        ended.retry_of == original,
        env.store.get_run(original).status,
        [(a.actor, a.action, a.workflow) for a in env.store.audit_log()],
        [(e.status, e.resolved_by) for e in env.store.list_ledger()],
        env.statuses(),
        len(env.sheets.effects()) + len(env.slack.effects()),
    )


CASES: list[tuple[Setup, ResolveChoice, Method]] = [
    (failed, ResolveChoice.RETRY, _retry),
    (escalated_reconcilable, ResolveChoice.RETRY, _try_again),
    (escalated, ResolveChoice.DIDNT_HAPPEN, _didnt_happen),
    (escalated, ResolveChoice.SKIP, _skip),
    (escalated_reconcilable, ResolveChoice.SKIP, _skip),
]


@pytest.mark.parametrize(("setup", "choice", "method"), CASES)
def test_each_choice_has_the_effect_of_the_action_it_names(
    store_url: str, tmp_path: Path, setup: Setup, choice: ResolveChoice, method: Method
) -> None:
    other_url = store_url if store_url == "memory://" else f"sqlite:///{tmp_path / 'other.db'}"
    by_choice, run_a = setup(store_url)
    by_method, run_b = setup(other_url)
    try:
        ended = by_choice.actions.resolve(run_a, choice.value, actor="bob")
        directly = method(by_method.actions, run_b, "bob")
        assert outcome(by_choice, ended, run_a) == outcome(by_method, directly, run_b)
        assert ended.status is RunStatus.COMMITTED
    finally:
        by_choice.store.close()
        by_method.store.close()


@pytest.mark.parametrize(
    ("choice", "method"),
    [
        (ResolveChoice.RETRY, _try_again),
        (ResolveChoice.DIDNT_HAPPEN, _didnt_happen),
        (ResolveChoice.SKIP, _skip),
    ],
)
def test_a_choice_that_does_not_apply_is_refused_as_its_action_refuses_it(
    store_url: str, choice: ResolveChoice, method: Method
) -> None:
    env, run_id = committed(store_url)
    with pytest.raises(ActionRefused) as direct:
        method(env.actions, run_id, "bob")
    before = env.store.audit_log()
    with pytest.raises(ActionRefused) as resolved:
        env.actions.resolve(run_id, choice, actor="bob")
    assert str(resolved.value) == str(direct.value)
    assert env.store.audit_log() == before
    assert env.store.get_run(run_id).status is RunStatus.COMMITTED


@pytest.mark.parametrize("choice", ["", "retried", "didnt_happen", "--skip", "SKIP", "cancel"])
def test_an_unknown_choice_is_refused_naming_the_valid_ones(store_url: str, choice: str) -> None:
    env, run_id = escalated(store_url)
    before = (env.store.audit_log(), env.store.list_ledger(), env.store.get_run(run_id))
    with pytest.raises(ActionRefused) as refused:
        env.actions.resolve(run_id, choice, actor="bob")
    message = str(refused.value)
    assert repr(choice) in message
    assert "retry, didnt-happen, skip" in message
    assert (env.store.audit_log(), env.store.list_ledger(), env.store.get_run(run_id)) == before


@pytest.mark.parametrize(
    ("setup", "offered"),
    [
        (failed, [ResolveChoice.RETRY]),
        (escalated, [ResolveChoice.HAPPENED, ResolveChoice.DIDNT_HAPPEN, ResolveChoice.SKIP]),
        (
            escalated_reconcilable,
            [
                ResolveChoice.RETRY,
                ResolveChoice.HAPPENED,
                ResolveChoice.DIDNT_HAPPEN,
                ResolveChoice.SKIP,
            ],
        ),
        (committed, []),
    ],
)
def test_the_choices_offered_are_those_resolve_accepts(
    store_url: str, setup: Setup, offered: list[ResolveChoice]
) -> None:
    env, run_id = setup(store_url)
    run = env.store.get_run(run_id)
    entry = env.store.ledger_entry_for_run(run_id)
    reconcilable = (
        entry is not None
        and env.runtime.connectors.operation(entry.connector, entry.operation).reconcilable
    )
    assert resolve_choices(run, entry, reconcilable=reconcilable) == offered
    for choice in set(ResolveChoice) - set(offered):
        if choice is ResolveChoice.RETRY and run.status is RunStatus.PAUSED_RECONCILIATION:
            with pytest.raises(ActionRefused, match="cannot be reconciled"):
                env.actions.resolve(run_id, choice, actor="bob")
        else:
            with pytest.raises(ActionRefused):
                env.actions.resolve(run_id, choice, actor="bob")


def _escalate_with_the_cli(folder: Path) -> tuple[str, str]:
    """A SQLite store under `folder` whose demo run's chat post timed out: (url, run id)."""
    from tests.cli.test_resolving import escalate

    folder.mkdir()
    url = f"sqlite:///{folder / 'keep.db'}"
    return url, escalate(folder, url)


def _audit(url: str) -> list[tuple[Any, ...]]:
    inst = Installation.open(url, isolation="in-process", must_exist=True)
    try:
        runs = {r.id: i for i, r in enumerate(inst.store.list_runs())}
        entries = {e.id: i for i, e in enumerate(inst.store.list_ledger())}

        def same(value: Any) -> Any:
            if isinstance(value, str):
                return ("run", runs[value]) if value in runs else ("entry", entries.get(value))
            return value

        return [
            (
                a.actor,
                a.action,
                a.workflow,
                same(a.target),
                json.dumps({k: same(v) for k, v in (a.detail or {}).items()}, sort_keys=True),
            )
            for a in inst.store.audit_log()
        ]
    finally:
        inst.close()


@pytest.mark.parametrize("choice", [ResolveChoice.DIDNT_HAPPEN, ResolveChoice.SKIP])
def test_the_command_line_and_the_console_write_the_same_audit_record(
    tmp_path: Path, choice: ResolveChoice
) -> None:
    cli_url, cli_run = _escalate_with_the_cli(tmp_path / "cli")
    web_url, web_run = _escalate_with_the_cli(tmp_path / "console")
    assert _audit(cli_url) == _audit(web_url)

    done = keep(
        "resolve", cli_run, f"--{choice.value}", "--store", cli_url, "--isolation", "in-process"
    )
    assert done.code == 0, done.err

    inst = opened(web_url)
    settings = ConsoleSettings(store_url=web_url, token=TOKEN, actor=cli_actor())
    try:
        with (
            served(create_app(settings, inst)) as base,
            httpx.Client(base_url=base, timeout=60) as http,
        ):
            answer = http.post(
                "/api/actions",
                headers={"Authorization": f"Bearer {TOKEN}"},
                json={"action": "resolve", "run": web_run, "choice": choice.value},
            )
            assert answer.status_code == 200, answer.text
    finally:
        inst.close()

    written = _audit(cli_url)
    assert written == _audit(web_url)
    assert (cli_actor(), f"resolve_mutation:{choice.value.replace('-', '_')}") in {
        (who, action) for who, action, *_ in written
    }
