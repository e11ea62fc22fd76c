"""Execution semantics frozen at deploy: the connector operations a version was validated with.

A deployed version records the connector manifest it was validated against. At
run time an operation may be called only as it was then: one the connectors
offer only now, or whose kind or permission changed since (an MCP server that
changed its tools, a connector upgraded), is refused until the workflow is
redeployed, so a change outside the workflow cannot change what it may do.

A durable operation's key fields and park timeout are frozen too, but a change
of them is not refused: the version's own declaration is used (`durable_semantics`),
so an upgrade affects new versions only (002 §3.1) and runs already under way
keep their correlation keys and deadlines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from keep_sdk.errors import UnknownOperation

if TYPE_CHECKING:
    from keep_sdk.connectors import Operation
    from keep_sdk.contract.manifest import DurableDeclaration, Manifest

__all__ = ["check_frozen", "durable_semantics"]


def check_frozen(
    frozen: Manifest | None,
    connector: str,
    operation: str,
    live: Operation[Any],
    *,
    workflow: str,
    version: int,
) -> None:
    """Refuse ``ctx.<connector>.<operation>`` unless it is as the version saw it at deploy.

    `frozen` None (a version deployed before manifests were recorded) allows
    every call. Raises `UnknownOperation`, which fails the run as a logic error.
    """
    if frozen is None:
        return
    what = f"ctx.{connector}.{operation}"
    deployed = f"version {version} of {workflow!r} was deployed"
    try:
        was = frozen.operation(connector, operation)
    except UnknownOperation:
        raise UnknownOperation(
            f"{what} was not offered when {deployed}; redeploy the workflow to use it",
            connector=connector,
            operation=operation,
        ) from None
    if was.kind is not live.kind or was.permission != live.permission:
        raise UnknownOperation(
            f"{what} changed since {deployed}: it was a {was.kind.value} needing "
            f"{was.permission}, it is now a {live.kind.value} needing {live.permission}; "
            "redeploy the workflow to accept the change",
            connector=connector,
            operation=operation,
        )


def durable_semantics(
    frozen: Manifest | None, connector: str, operation: str, live: Operation[Any]
) -> DurableDeclaration:
    """The key fields and park timeout a durable call of this version uses.

    The declaration frozen with the version when it has one; the connector's
    current one for versions recorded before declarations were frozen (`frozen`
    None, or an operation entry without ``durable``).
    """
    if frozen is not None:
        try:
            was = frozen.operation(connector, operation).durable
        except UnknownOperation:
            was = None
        if was is not None:
            return was
    return live.declaration
