"""The deployer: a script validated against the runtime's connectors and its workflow's
policy, stored as a version, and the stored versions a run reads back.

A script is validated once per deploy: `Deployer.check` (or a caller that
validated it before the store was open, handing in a `CheckedScript`) gives
the manifest that is stored, and a `CheckedScript` made against other
connectors or another policy is validated again rather than trusted.

A stored version whose manifest lacks the approved ctx call sites (deployed before
they were recorded) gets them when it is loaded: its stored source is validated again
against its frozen connectors, once per version and process. A version whose source no
longer validates cannot be checked by site: it loads without sites and with the reason
(`LoadedVersion.unchecked`), so its phases fail closed, never run unchecked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import JsonValue

from keep_sdk.connectors import ConnectorSet
from keep_sdk.contract import RESERVED_NAME_PREFIX
from keep_sdk.contract.workflow import (
    ConsumerManifest,
    HandlerLocation,
    ProducerManifest,
    WorkflowManifest,
)
from keep_sdk.errors import (
    ConfigurationError,
    LogicError,
    NotFound,
    ScriptRejected,
    TransientError,
)
from keep_sdk.model import HandlerKind, HandlerPhase, HostPolicy
from keep_sdk.stores import HandlerSpec, Store, WorkflowRecord, WorkflowVersion

if TYPE_CHECKING:
    from keep_sdk.contract.manifest import Manifest
    from keep_sdk.runtime._loading import LoadedWorkflow, WorkflowLoader

__all__ = ["CheckedScript", "Deployer", "LoadedVersion", "records_sites", "with_sites_of"]


@dataclass(frozen=True, slots=True)
class CheckedScript:
    """A script the validator accepted, with the world it was checked in: `connectors` (what
    it may call) and `policy` (the one its workflow runs with). `Runtime.deploy` stores
    `workflow`'s manifest as is when that world is the runtime's own."""

    source: str
    filename: str | None
    workflow: LoadedWorkflow
    connectors: Manifest
    policy: HostPolicy


@dataclass(frozen=True, slots=True)
class LoadedVersion:
    """A stored workflow version as a run reads it: the record, the version, its manifest.

    `unchecked` says why the manifest has no call sites (a version deployed before they
    were recorded whose source no longer validates): its phases must not run.
    """

    record: WorkflowRecord
    version: WorkflowVersion
    manifest: WorkflowManifest
    unchecked: str | None = None

    def producer(self, name: str) -> ProducerManifest:
        for producer in self.manifest.producers:
            if producer.name == name:
                return producer
        raise NotFound(
            f"workflow {self.record.name!r} version {self.version.version} has no producer "
            f"{name!r}; producers: {', '.join(p.name for p in self.manifest.producers) or 'none'}"
        )

    def consumer(self, name: str) -> ConsumerManifest:
        for consumer in self.manifest.consumers:
            if consumer.name == name:
                return consumer
        raise NotFound(
            f"workflow {self.record.name!r} version {self.version.version} has no consumer "
            f"{name!r}; consumers: {', '.join(c.name for c in self.manifest.consumers) or 'none'}"
        )


def _same_connectors(one: Manifest, other: Manifest) -> bool:
    """Whether two manifests declare the same connectors, in whatever order."""
    return sorted(one.connectors, key=lambda c: c.name) == sorted(
        other.connectors, key=lambda c: c.name
    )


def _locations(manifest: WorkflowManifest) -> list[HandlerLocation]:
    return [p.handler for p in manifest.producers] + [
        location for c in manifest.consumers for location in (c.prepare, c.mutate, c.next)
    ]


def records_sites(manifest: WorkflowManifest) -> bool:
    """Whether every handler phase of `manifest` has its approved call sites recorded."""
    return all(location.call_sites is not None for location in _locations(manifest))


def with_sites_of(manifest: WorkflowManifest, checked: WorkflowManifest) -> WorkflowManifest:
    """`manifest` with the call sites `checked` (the same source validated again) approves
    for each handler phase; a phase `checked` does not know approves none."""

    def located(handler: str, phase: HandlerPhase, location: HandlerLocation) -> HandlerLocation:
        sites = checked.call_sites(handler, phase)
        return location.model_copy(update={"call_sites": sites or ()})

    producers = [
        p.model_copy(update={"handler": located(p.name, HandlerPhase.PRODUCER, p.handler)})
        for p in manifest.producers
    ]
    consumers = [
        c.model_copy(
            update={
                phase.value: located(c.name, phase, getattr(c, phase.value))
                for phase in (HandlerPhase.PREPARE, HandlerPhase.MUTATE, HandlerPhase.NEXT)
            }
        )
        for c in manifest.consumers
    ]
    return manifest.model_copy(update={"producers": producers, "consumers": consumers})


class Deployer:
    """Validation, policy and versions of one runtime (see `keep_sdk.runtime.Runtime`)."""

    def __init__(
        self,
        store: Store,
        connectors: ConnectorSet,
        *,
        load_workflow: WorkflowLoader | None,
        policy: HostPolicy,
        workflow_policies: Mapping[str, HostPolicy],
    ) -> None:
        self.store = store
        self.connectors = connectors
        self.load_workflow = load_workflow
        self.policy = policy
        self.workflow_policies = dict(workflow_policies)
        self._manifest: Manifest | None = None
        self._versions: dict[tuple[str, int], LoadedVersion] = {}

    @property
    def manifest(self) -> Manifest:
        """The connectors' manifest, computed on first use (building it may reach a server)."""
        if self._manifest is None:
            self._manifest = self.connectors.manifest()
        return self._manifest

    def policy_for(self, workflow: str) -> HostPolicy:
        """The policy runs of `workflow` get: its own when it has one, else `policy`."""
        return self.workflow_policies.get(workflow, self.policy)

    def deploy(
        self,
        source: str,
        *,
        name: str | None,
        filename: str | None,
        checked: CheckedScript | None,
    ) -> int:
        workflow_name, manifest, handlers = self._deployable(source, name, filename, checked)
        return self.store.deploy(workflow_name, source, manifest, handlers=handlers)

    def deploy_if_changed(
        self,
        source: str,
        *,
        name: str | None,
        filename: str | None,
        checked: CheckedScript | None,
    ) -> tuple[int, bool]:
        workflow_name, manifest, handlers = self._deployable(source, name, filename, checked)
        return self.store.deploy_if_changed(workflow_name, source, manifest, handlers=handlers)

    def _deployable(
        self,
        source: str,
        name: str | None,
        filename: str | None,
        checked: CheckedScript | None,
    ) -> tuple[str, JsonValue, list[HandlerSpec]]:
        """Validate `source` (unless `checked` already did in this runtime's world); its
        workflow name, manifest and handlers, ready to deploy."""
        if checked is None or not self.fits(checked, source, name):
            checked = self.check(source, filename, name)
        manifest = checked.workflow.manifest.model_copy(
            update={"connectors": self.connectors.manifest()}
        )
        workflow_name = name or manifest.name
        if not workflow_name:
            raise LogicError('the workflow has no name; add `name: "..."` to Keep.workflow({...})')
        if workflow_name.startswith(RESERVED_NAME_PREFIX):
            raise LogicError(
                f"the workflow name {workflow_name!r} starts with {RESERVED_NAME_PREFIX!r}, "
                "which is reserved for the workers' presence rows; choose another name"
            )
        handlers = [
            HandlerSpec(name=p.name, kind=HandlerKind.PRODUCER) for p in manifest.producers
        ] + [
            HandlerSpec(name=c.name, kind=HandlerKind.CONSUMER, subscribe=list(c.subscribe))
            for c in manifest.consumers
        ]
        return workflow_name, manifest.model_dump(mode="json"), handlers

    def fits(self, checked: CheckedScript, source: str, name: str | None) -> bool:
        """Whether `checked` validated `source` against these connectors and with the policy
        the workflow deployed as `name` (else as the name it declares) runs with."""
        workflow = name or checked.workflow.manifest.name
        policy = self.policy_for(workflow) if workflow else self.policy
        return (
            checked.source == source
            and checked.policy == policy
            and _same_connectors(checked.connectors, self.connectors.manifest())
        )

    def check(self, source: str, filename: str | None, name: str | None = None) -> CheckedScript:
        """Validate `source` with the policy of its workflow (`name`, else the name the
        script declares): a per-workflow ``mutate_reads`` or limit decides its checks too."""
        if self.load_workflow is None:
            raise ConfigurationError(
                "this Runtime was built without a workflow loader, so it cannot validate and "
                "deploy scripts; pass load_workflow=KeepPlugins().load_workflow (or open an "
                "installation with keep_sdk.app.Installation)"
            )
        policy = self.policy_for(name) if name else self.policy
        connectors = self.connectors.manifest()
        try:
            loaded = self.load_workflow(
                source, connectors=connectors, policy=policy, filename=filename
            )
        except ScriptRejected as exc:
            report = exc.report
            declared = report.workflow.name if report is not None and report.workflow else None
            if name or not declared or self.policy_for(declared) == policy:
                raise
            return self.check(source, filename, declared)
        declared = loaded.manifest.name
        if not name and declared and self.policy_for(declared) != policy:
            return self.check(source, filename, declared)
        return CheckedScript(source, filename, loaded, connectors, policy)

    def load(self, workflow: str, version: int | None = None) -> LoadedVersion:
        """`workflow` at `version` (default: its current one), its manifest parsed once, with
        its approved call sites (computed once for a version stored without them; see the
        module doc). Raises `TransientError` when the connectors needed to compute them
        cannot be built now."""
        record = self.store.get_workflow(workflow)
        number = version or record.version
        key = (workflow, number)
        if key not in self._versions:
            stored = self.store.get_workflow_version(workflow, number)
            manifest = WorkflowManifest.model_validate(stored.manifest)
            unchecked = None
            if not records_sites(manifest):
                manifest, unchecked = self._sited(workflow, stored, manifest)
            self._versions[key] = LoadedVersion(record, stored, manifest, unchecked)
        cached = self._versions[key]
        return LoadedVersion(record, cached.version, cached.manifest, cached.unchecked)

    def _sited(
        self, workflow: str, stored: WorkflowVersion, manifest: WorkflowManifest
    ) -> tuple[WorkflowManifest, str | None]:
        """`manifest` with the call sites of its stored source validated again against the
        version's frozen connectors (the live ones for a version recorded before them), or
        `manifest` as it is and why its phases cannot be checked."""
        what = (
            f"workflow {workflow!r} version {stored.version} was deployed before ctx call "
            "sites were recorded"
        )
        if self.load_workflow is None:
            return manifest, (
                f"{what}, and this runtime has no workflow loader to compute them, so its "
                "phases cannot be checked and do not run: build the runtime with "
                "load_workflow (keep_sdk.app.Installation does), or deploy the script again"
            )
        connectors = manifest.connectors
        if connectors is None:
            try:
                connectors = self.manifest
            except ConfigurationError as exc:
                raise TransientError(str(exc)) from exc
        try:
            checked = self.load_workflow(
                stored.source,
                connectors=connectors,
                policy=self.policy_for(workflow),
                filename=f"{workflow}@v{stored.version}",
            )
        except ScriptRejected as exc:
            return manifest, (
                f"{what}, and its source no longer validates, so the ctx calls its phases "
                f"may make cannot be checked and they do not run: {exc} Fix the script and "
                "deploy it again (`keep deploy`)"
            )
        return with_sites_of(manifest, checked.manifest), None
