"""Deploying validates a script once, with the runtime's connectors and its workflow's policy;
the connectors' manifest is computed on first use, never while a runtime is built."""

from __future__ import annotations

from typing import Any

import pytest

from keep_sdk.connectors import ConnectorSet
from keep_sdk.connectors.builtin import Gmail, Sheets, Slack
from keep_sdk.contract.manifest import Manifest
from keep_sdk.contract.workflow import WorkflowManifest
from keep_sdk.errors import ScriptRejected
from keep_sdk.model import HostPolicy
from keep_sdk.plugins import KeepPlugins
from keep_sdk.runtime import CheckedScript, Runtime
from keep_sdk.sandbox import InProcessIsolation
from keep_sdk.stores import Store, open_store
from tests.runtime.harness import MAIL_TO_SHEET

READS_IN_MUTATE = MAIL_TO_SHEET.replace(
    "async mutate(ctx, prepared) {",
    'async mutate(ctx, prepared) {\n        await ctx.gmail.getById({ id: "m1" });',
)
"""A script whose mutate reads by id: accepted only with ``mutate_reads = "by_id"``."""

LENIENT = HostPolicy.model_validate({"mutate_reads": "by_id"})


class CountedConnectors(ConnectorSet):
    """The built-in doubles, counting how often their manifest is asked for."""

    def __init__(self) -> None:
        super().__init__([Gmail(), Sheets(), Slack()])
        self.manifests = 0

    def manifest(self) -> Manifest:
        self.manifests += 1
        return super().manifest()


class CountedLoader:
    """The plugins' loader, recording the policy of every validation."""

    def __init__(self) -> None:
        self.policies: list[HostPolicy] = []
        self.plugins = KeepPlugins(load_entry_points=False)

    def __call__(self, source: str, **options: Any) -> Any:
        self.policies.append(options["policy"])
        return self.plugins.load_workflow(source, **options)


@pytest.fixture
def store() -> Store:
    return open_store("memory://")


def runtime(
    store: Store, loader: CountedLoader, connectors: ConnectorSet | None = None, **options: Any
) -> Runtime:
    return Runtime(
        store,
        connectors or ConnectorSet([Gmail(), Sheets(), Slack()]),
        load_workflow=loader,
        isolation=InProcessIsolation(),
        **options,
    )


def test_building_a_runtime_never_asks_the_connectors_for_their_manifest(store: Store) -> None:
    connectors = CountedConnectors()
    built = runtime(store, CountedLoader(), connectors)
    assert connectors.manifests == 0
    assert [c.name for c in built.manifest.connectors] == ["gmail", "sheets", "slack"]
    assert [c.name for c in built.manifest.connectors] == ["gmail", "sheets", "slack"]
    assert connectors.manifests == 1


def test_a_checked_script_is_deployed_without_a_second_validation(store: Store) -> None:
    loader = CountedLoader()
    rt = runtime(store, loader)
    checked = rt.check(MAIL_TO_SHEET)
    assert rt.deploy_if_changed(MAIL_TO_SHEET, checked=checked) == (1, True)
    assert len(loader.policies) == 1
    stored = WorkflowManifest.model_validate(store.get_workflow_version("mail-to-sheet").manifest)
    assert stored.model_copy(update={"connectors": None}) == checked.workflow.manifest
    assert stored.connectors == rt.manifest


def test_a_script_checked_with_another_policy_is_validated_again_with_its_own(
    store: Store,
) -> None:
    lenient = CountedLoader()
    checked = runtime(store, lenient, policy=LENIENT).check(READS_IN_MUTATE)
    strict = CountedLoader()
    rt = runtime(store, strict)
    with pytest.raises(ScriptRejected):
        rt.deploy(READS_IN_MUTATE, checked=checked)
    assert strict.policies == [HostPolicy()]
    assert store.list_workflows() == []


def test_a_script_checked_against_other_connectors_is_validated_again(store: Store) -> None:
    loader = CountedLoader()
    rt = runtime(store, loader)
    fewer = Manifest(connectors=[Gmail.manifest(), Sheets.manifest()])
    made = CountedLoader()
    workflow = made(MAIL_TO_SHEET, connectors=fewer, policy=HostPolicy(), filename=None)
    checked = CheckedScript(MAIL_TO_SHEET, None, workflow, fewer, HostPolicy())
    assert rt.deploy(MAIL_TO_SHEET, checked=checked) == 1
    assert len(loader.policies) == 1


def test_a_workflow_policy_decides_which_checked_script_fits(store: Store) -> None:
    loader = CountedLoader()
    rt = runtime(store, loader, workflow_policies={"mail-to-sheet": LENIENT})
    checked = rt.check(READS_IN_MUTATE)
    assert checked.policy == LENIENT
    validations = len(loader.policies)
    assert rt.deploy(READS_IN_MUTATE, checked=checked) == 1
    assert len(loader.policies) == validations
