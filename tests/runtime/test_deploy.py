"""`Runtime.deploy_if_changed`: a new version only when the source changed."""

from __future__ import annotations

import pytest

from keep_sdk.errors import LogicError, ScriptRejected
from tests.runtime.harness import MAIL_TO_SHEET, Env

V2 = MAIL_TO_SHEET.replace(
    "values: [prepared.data.from, prepared.data.subject]",
    'values: ["v2", prepared.data.from]',
)


def test_the_same_source_makes_no_new_version(env: Env) -> None:
    assert env.runtime.deploy_if_changed(MAIL_TO_SHEET) == (1, False)
    assert env.store.get_workflow("mail-to-sheet").version == 1


def test_a_changed_source_is_deployed_as_a_new_version(env: Env) -> None:
    assert env.runtime.deploy_if_changed(V2) == (2, True)
    assert env.runtime.deploy_if_changed(V2) == (2, False)
    assert env.runtime.deploy_if_changed(MAIL_TO_SHEET) == (3, True)
    assert env.store.get_workflow_version("mail-to-sheet").source == MAIL_TO_SHEET


def test_a_name_deploys_the_script_under_that_name(env: Env) -> None:
    assert env.runtime.deploy_if_changed(MAIL_TO_SHEET, name="copy") == (1, True)
    assert env.runtime.deploy_if_changed(MAIL_TO_SHEET, name="copy") == (1, False)
    assert env.store.get_workflow("mail-to-sheet").version == 1


def test_a_script_with_errors_is_refused(env: Env) -> None:
    broken = MAIL_TO_SHEET.replace("async mutate(ctx, prepared) {", "async mutate(ctx) { x = 1;")
    with pytest.raises(ScriptRejected):
        env.runtime.deploy_if_changed(broken)
    assert env.store.get_workflow("mail-to-sheet").version == 1


@pytest.mark.parametrize("deploy", ["deploy", "deploy_if_changed"])
def test_a_name_reserved_for_worker_presence_is_refused(env: Env, deploy: str) -> None:
    with pytest.raises(LogicError, match="reserved for the workers' presence"):
        getattr(env.runtime, deploy)(MAIL_TO_SHEET, name="keep-worker:0")
    assert [w.name for w in env.store.list_workflows()] == ["mail-to-sheet"]
