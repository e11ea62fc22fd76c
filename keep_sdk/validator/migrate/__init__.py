"""Rewrite a script in the original product's format into this SDK's format.

``migrate(source)`` returns the rewritten script and a note for each place it
could not convert; the rewritten script carries a ``// TODO(migrate)`` comment
there. See docs/migrate.md.
"""

from __future__ import annotations

from keep_sdk.validator.migrate.rewrite import Migration, MigrationNote, migrate

__all__ = ["Migration", "MigrationNote", "migrate"]
