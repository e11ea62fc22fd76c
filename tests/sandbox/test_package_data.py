"""The sandbox ships its prelude as package data."""

from __future__ import annotations


def test_the_prelude_ships_as_package_data() -> None:
    from importlib import resources

    text = resources.files("keep_sdk.sandbox").joinpath("prelude.js").read_text("utf-8")
    assert "function boot" in text
