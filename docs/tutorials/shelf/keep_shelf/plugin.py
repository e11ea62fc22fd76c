"""The plugin: ``shelf://NAME`` opens the `ShelfStore` named NAME."""

from collections.abc import Callable, Mapping
from typing import Any

import keep_sdk
from keep_shelf.store import ShelfStore


@keep_sdk.hookimpl
def register_stores() -> Mapping[str, Callable[..., Any]]:
    return {"shelf": ShelfStore.from_url}
