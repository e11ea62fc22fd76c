"""A keep_sdk store built on the small `Transaction` protocol, shipped as a plugin."""

from keep_shelf.store import ShelfStore

__all__ = ["ShelfStore"]
