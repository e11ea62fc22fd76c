"""A connector set that kills the host right before or after one operation's effect."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from pydantic import JsonValue

from keep_sdk.cases._delegate import DelegatingConnectors
from keep_sdk.cases._model import Crash
from keep_sdk.connectors import Connector
from keep_sdk.contract.durable import DurableAnswer, InvocationContext

__all__ = ["CrashingConnectors", "SimulatedCrash"]


class SimulatedCrash(BaseException):
    """The host dies here. A BaseException, so no handler in the host can catch it."""


class CrashingConnectors(DelegatingConnectors):
    """An installation's connectors; `crash`, when set, names the call that kills the host
    (once). Built in `keep_sdk.app.Installation.open`'s `wrap_connectors`; it delegates
    lazily, so wrapping builds no connector."""

    crash: Crash | None = None

    def invoke(
        self,
        connector: str,
        js_name: str,
        arguments: Any,
        *,
        idempotency_key: str | None = None,
    ) -> JsonValue:
        armed = self.crash
        target = armed is not None and armed.call == f"{connector}.{js_name}"
        if target and armed is not None and armed.when == "before_effect":
            self.crash = None
            raise SimulatedCrash(f"killed before {connector}.{js_name}")
        result = super().invoke(connector, js_name, arguments, idempotency_key=idempotency_key)
        if target:
            self.crash = None
            raise SimulatedCrash(f"killed after {connector}.{js_name}")
        return result

    def __getitem__(self, name: str) -> Connector:
        connector = super().__getitem__(name)
        armed = self.crash
        if armed is None or armed.call is None or armed.call.partition(".")[0] != name:
            return connector
        return cast(Connector, _CrashingStart(self, connector))


class _CrashingStart:
    """A connector whose durable ``start`` (``call: approvals.request``) or ``poll``
    (``call: jobs.poll:submit``) kills the host before or after its effect."""

    def __init__(self, owner: CrashingConnectors, connector: Connector) -> None:
        self._owner = owner
        self._connector = connector

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connector, name)

    def start(self, js_name: str, arguments: Any, invocation: InvocationContext) -> DurableAnswer:
        return self._call(
            f"{self._connector.name}.{js_name}",
            lambda: self._connector.start(js_name, arguments, invocation),
        )

    def poll(self, js_name: str, arguments: Any, invocation: InvocationContext) -> DurableAnswer:
        return self._call(
            f"{self._connector.name}.poll:{js_name}",
            lambda: self._connector.poll(js_name, arguments, invocation),
        )

    def _call(self, what: str, call: Callable[[], DurableAnswer]) -> DurableAnswer:
        armed = self._owner.crash
        if armed is None or armed.call != what:
            return call()
        self._owner.crash = None
        if armed.when == "before_effect":
            raise SimulatedCrash(f"killed before {what}")
        call()
        raise SimulatedCrash(f"killed after {what}")
