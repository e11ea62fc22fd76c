"""What the runtime needs to deploy a script: a loader handed in by the composition root.

The runtime does not import the validator: whoever builds a `Runtime` passes a
`WorkflowLoader` (``KeepPlugins.load_workflow`` checks the script with the
plugins' rules), so deploying validates with the same registries as
``keep validate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from keep_sdk.contract.manifest import Manifest
    from keep_sdk.contract.workflow import WorkflowManifest
    from keep_sdk.model import HostPolicy

__all__ = ["LoadedWorkflow", "WorkflowLoader"]


class LoadedWorkflow(Protocol):
    """A validated script: the runtime reads only its manifest."""

    @property
    def manifest(self) -> WorkflowManifest:
        """What the script declares: topics, producers, consumers, the default export."""
        ...


class WorkflowLoader(Protocol):
    """Validates a script against `connectors` and `policy` and returns it loaded.

    Raises `ScriptRejected` (with the validator's report) when the script has errors.
    """

    def __call__(
        self,
        source: str,
        *,
        connectors: Manifest,
        policy: HostPolicy,
        filename: str | None,
    ) -> LoadedWorkflow: ...
