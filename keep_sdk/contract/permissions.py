"""The permission check every connector call passes, written once."""

from __future__ import annotations

from collections.abc import Collection

from keep_sdk.errors import PermissionDenied

__all__ = ["require_permission"]


def require_permission(
    operation: str, permission: str, grants: Collection[str], workflow: str
) -> None:
    """Raise `PermissionDenied` unless `permission` is among the workflow's `grants`.

    `operation` is the call as the script wrote it (``ctx.sheets.appendRow``); the
    message names the exact command that grants the permission.
    """
    if permission in grants:
        return
    raise PermissionDenied(
        f"{operation} needs the permission {permission!r}, which workflow {workflow!r} "
        f"has not been granted; grant it with `keep grant {workflow} {permission}`",
        permission=permission,
    )
