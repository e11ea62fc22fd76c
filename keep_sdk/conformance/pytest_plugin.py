"""The keep-sdk pytest plugin (entry point ``pytest11``): options for the shipped suites.

``--keep-store-url URL`` names the store `keep_sdk.conformance.stores.at_url`
checks; ``keep conformance --store URL`` passes it.
"""

from __future__ import annotations

import pytest

__all__ = ["STORE_URL_OPTION", "pytest_addoption"]

STORE_URL_OPTION = "--keep-store-url"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("keep_sdk", "keep-sdk conformance suites")
    group.addoption(
        STORE_URL_OPTION,
        action="store",
        default=None,
        metavar="URL",
        help="store URL (memory://, sqlite:///path, postgresql://...) the store suite checks",
    )
