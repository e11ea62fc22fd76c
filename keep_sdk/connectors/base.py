"""The `Connector` base class: operations collected from a class, invoked with validation."""

from __future__ import annotations

import re
from functools import partial
from typing import Any, ClassVar

from pydantic import BaseModel, JsonValue, TypeAdapter, ValidationError

from keep_sdk.connectors.operation import Operation
from keep_sdk.contract.durable import Done, DurableAnswer, InvocationContext, Pending
from keep_sdk.contract.manifest import ConnectorManifest
from keep_sdk.errors import ConnectorError, InternalError, UnknownOperation
from keep_sdk.model import OperationKind, ReconcileOutcome, ReconcileStatus

__all__ = ["Connector"]

_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")


_MANIFESTS: dict[type[Connector], ConnectorManifest] = {}


def _manifest_of(cls: type[Connector]) -> ConnectorManifest:
    manifest = _MANIFESTS.get(cls)
    if manifest is None:
        description = cls.description or " ".join((cls.__doc__ or "").split())
        manifest = _MANIFESTS[cls] = ConnectorManifest(
            name=cls.name,
            description=description,
            operations=[op.manifest() for op in cls.operations.values()],
        )
    return manifest


_JSON: TypeAdapter[JsonValue] = TypeAdapter(JsonValue)


class Connector:
    """Base of every connector: subclass it, set `name`, declare `operation`s.

    `invoke` validates arguments against the operation's model, calls it, and
    returns plain JSON. `ConnectorError` subclasses raised by an operation pass
    through unchanged (they classify the failure); any other exception becomes an
    `InternalError`, since it is a bug in the connector rather than an outcome.
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    operations: ClassVar[dict[str, Operation[Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[str, Operation[Any]] = {}
        for klass in reversed(cls.__mro__):
            for value in vars(klass).values():
                if isinstance(value, Operation):
                    found[value.js_name] = value
        cls.operations = dict(sorted(found.items()))
        name = getattr(cls, "name", None)
        if name is not None and not _NAME.match(name):
            raise InternalError(
                f"connector {cls.__qualname__} has name {name!r}; a connector name must be a "
                "JS identifier starting with a lowercase letter, such as 'sheets'"
            )

    @classmethod
    def manifest(cls) -> ConnectorManifest:
        """The connector as scripts, the validator and the sandbox see it.

        Built once per class (operations are fixed when the class is defined):
        generating the argument JSON Schemas costs milliseconds.
        """
        return _manifest_of(cls)

    @classmethod
    def operation(cls, js_name: str) -> Operation[Any]:
        """The declared operation `js_name`; `UnknownOperation` lists the known ones."""
        try:
            return cls.operations[js_name]
        except KeyError:
            known = ", ".join(cls.operations) or "none"
            raise UnknownOperation(
                f"connector {cls.name!r} has no operation {js_name!r}; it offers: {known}",
                connector=cls.name,
                operation=js_name,
            ) from None

    def invoke(
        self, js_name: str, arguments: Any, *, idempotency_key: str | None = None
    ) -> JsonValue:
        """Validate `arguments`, call the operation, return its result as JSON.

        Mutations require the host's `idempotency_key`; reads must not get one.
        """
        op = self.operation(js_name)
        if op.kind is OperationKind.DURABLE:
            raise InternalError(
                f"ctx.{self.name}.{js_name} is durable; the host calls start(), never invoke()"
            )
        args = op.parse(arguments, connector=self.name)
        method = getattr(self, op.attribute)
        if op.kind is OperationKind.MUTATION:
            if not idempotency_key:
                raise InternalError(
                    f"ctx.{self.name}.{js_name} is a mutation and was invoked without an "
                    "idempotency key; the host must derive one with idempotency_key()"
                )
            raw = self._guarded(method, args, idempotency_key=idempotency_key)
        else:
            raw = self._guarded(method, args)
        return self._to_json(raw, js_name)

    def start(self, js_name: str, arguments: Any, invocation: InvocationContext) -> DurableAnswer:
        """Start (or, with the same ``invocation_id``, re-find) a durable operation's work.

        `ConnectorError`s pass through; any other exception, or an answer that is
        neither `Pending` nor `Done`, is an `InternalError`.
        """
        op = self._durable(js_name)
        args = op.parse(arguments, connector=self.name)
        raw = self._guarded(getattr(self, op.attribute), args, invocation=invocation)
        return self._answer(raw, js_name, "start")

    def poll(self, js_name: str, arguments: Any, invocation: InvocationContext) -> DurableAnswer:
        """Ask how a durable operation's work is going; `InternalError` if it cannot poll."""
        op = self._durable(js_name)
        if op.poll_func is None:
            raise InternalError(f"ctx.{self.name}.{js_name} has no poll method")
        args = op.parse(arguments, connector=self.name)
        raw = self._guarded(partial(op.poll_func, self), args, invocation=invocation)
        return self._answer(raw, js_name, "poll")

    def cancel(self, js_name: str, arguments: Any, invocation: InvocationContext) -> str:
        """Best-effort cancel of a durable operation's work; what happened, in words.

        Never raises for the service's failure: cancellation is best-effort.
        """
        op = self._durable(js_name)
        if op.cancel_func is None:
            return "the connector cannot cancel this work; it may go on externally"
        try:
            op.cancel_func(self, op.parse(arguments, connector=self.name), invocation=invocation)
        except Exception as exc:
            return f"cancel failed ({type(exc).__name__}: {exc}); the work may go on externally"
        return "cancelled externally"

    def _durable(self, js_name: str) -> Operation[Any]:
        op = self.operation(js_name)
        if op.kind is not OperationKind.DURABLE:
            raise InternalError(f"ctx.{self.name}.{js_name} is a {op.kind.value}, not durable")
        return op

    def _answer(self, raw: Any, js_name: str, what: str) -> DurableAnswer:
        if isinstance(raw, Pending | Done):
            return raw
        raise InternalError(
            f"{what} of ctx.{self.name}.{js_name} returned {type(raw).__name__}; a durable "
            "operation answers Pending(token=...) or Done(ok=..., result=...)"
        )

    def reconcile(self, js_name: str, arguments: Any, idempotency_key: str) -> ReconcileOutcome:
        """Ask whether an uncertain mutation happened.

        An operation without a reconcile method raises `InternalError`: check
        ``operation(js_name).reconcilable`` first. A reconcile method that raises
        means "could not tell yet" and yields a `retry` outcome.
        """
        op = self.operation(js_name)
        if op.reconcile_func is None:
            raise InternalError(f"ctx.{self.name}.{js_name} has no reconcile method")
        args = op.parse(arguments, connector=self.name)
        try:
            outcome = op.reconcile_func(self, args, idempotency_key)
        except Exception as exc:
            return ReconcileOutcome(
                status=ReconcileStatus.RETRY, detail=f"{type(exc).__name__}: {exc}"
            )
        if not isinstance(outcome, ReconcileOutcome):
            raise InternalError(
                f"reconcile of ctx.{self.name}.{js_name} returned {outcome!r}, "
                "not a ReconcileOutcome"
            )
        return outcome

    def _guarded(self, method: Any, args: BaseModel, **kwargs: Any) -> Any:
        try:
            return method(args, **kwargs)
        except ConnectorError:
            raise
        except Exception as exc:
            raise InternalError(
                f"connector {self.name!r} raised {type(exc).__name__}: {exc}"
            ) from exc

    def _to_json(self, raw: Any, js_name: str) -> JsonValue:
        if isinstance(raw, BaseModel):
            return raw.model_dump(mode="json", by_alias=True)
        try:
            return _JSON.validate_python(raw)
        except ValidationError:
            raise InternalError(
                f"ctx.{self.name}.{js_name} returned {type(raw).__name__}, which is not JSON"
            ) from None
