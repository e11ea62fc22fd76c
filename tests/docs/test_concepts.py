"""The hand-written lifecycle page names every run phase and status the model has."""

from __future__ import annotations

from pathlib import Path

from keep_sdk.model import RunPhase, RunStatus

PAGE = Path(__file__).parents[2] / "docs" / "concepts" / "lifecycle.md"


def test_every_phase_and_status_is_on_the_lifecycle_page() -> None:
    text = PAGE.read_text()
    for phase in RunPhase:
        assert f"{phase.value}" in text, phase
    for status in RunStatus:
        assert f"| `{status.value}` |" in text, status
