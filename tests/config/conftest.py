"""The HTTP service of the connector tests, for configuration tests."""

from tests.connectors.conftest import TOKEN, service

__all__ = ["TOKEN", "service"]
