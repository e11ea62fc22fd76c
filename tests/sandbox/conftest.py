"""Fixtures of the sandbox tests (helpers live in helpers.py)."""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import RecordingHost


@pytest.fixture
def host() -> RecordingHost:
    return RecordingHost()
