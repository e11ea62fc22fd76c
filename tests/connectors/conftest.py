"""A real HTTP service on 127.0.0.1 for the HTTP connector tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.connectors.http_service import RunningService, running_service

TOKEN = "tok-Zq8-s3cr3t-value-4711"
"""The bearer token the service requires; tests check it never leaks."""


@pytest.fixture
def service() -> Iterator[RunningService]:
    """A fresh service (empty state) per test."""
    with running_service(TOKEN) as running:
        yield running
