"""The commit points of the store contract, written once over the `Transaction` protocol."""

from keep_sdk.stores._commit._base import TransactionalStore

__all__ = ["TransactionalStore"]
