"""The commit points of the store contract, written once over the `Transaction` protocol."""

from keep_sdk.stores._commit.base import TransactionalStore

__all__ = ["TransactionalStore"]
