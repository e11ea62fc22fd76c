"""Fixtures of the sandbox tests (helpers live in helpers.py). The sandbox builds the
models of its own results without validating them (`trusted`): in every sandbox test
each one is checked against its validated copy."""

from __future__ import annotations

import pytest

from keep_sdk.sandbox import engine
from tests.sandbox.helpers import RecordingHost
from tests.trusted_models import checked_trusted


@pytest.fixture(autouse=True)
def _results_are_built_as_validation_would(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "trusted", checked_trusted)


@pytest.fixture
def host() -> RecordingHost:
    return RecordingHost()
