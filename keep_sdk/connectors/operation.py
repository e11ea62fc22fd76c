"""Declaring connector operations: the `operation` decorator and what it records."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MethodType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from keep_sdk.errors import InternalError, InvalidArguments
from keep_sdk.model import OperationKind, explain_validation_error

if TYPE_CHECKING:
    from keep_sdk.contract.manifest import DurableDeclaration, OperationManifest

__all__ = ["Operation", "operation"]

ArgsT = TypeVar("ArgsT", bound=BaseModel)
Handler = Callable[..., Any]
Reconciler = Callable[..., Any]


class Operation(Generic[ArgsT]):
    """One operation of a connector class, created by the `operation` decorator.

    Reads are called as ``method(self, args)``; mutations as
    ``method(self, args, *, idempotency_key)``. A mutation may add a
    reconcile method with ``@<operation>.reconciler``, called as
    ``reconcile(self, args, idempotency_key)`` and returning a
    `keep_sdk.model.ReconcileOutcome`.

    A durable operation's method is its ``start``, called as
    ``method(self, args, *, invocation)`` with an
    `keep_sdk.contract.durable.InvocationContext` and answering ``Pending`` or
    ``Done``; it may add ``@<operation>.poller`` (``poll(self, args, *,
    invocation)``, the same answers) and ``@<operation>.canceller`` (``cancel(self,
    args, *, invocation)``, best-effort). `key_fields` names argument fields that join
    the correlation key (002 §3 ``idempotency.key_fields``); `timeout` is the
    park timeout as an ISO 8601 duration (``"P14D"``). `result` is the JSON Schema of
    what the operation returns to the script (a durable operation: what it completes
    with); the manifest shows it and the validator checks what scripts read from it.
    """

    def __init__(
        self,
        func: Handler,
        *,
        kind: OperationKind,
        permission: str,
        args: type[ArgsT],
        name: str | None = None,
        description: str | None = None,
        key_fields: tuple[str, ...] = (),
        timeout: str | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> None:
        if not permission or "." not in permission:
            raise InternalError(
                f"operation {func.__name__!r} declares permission {permission!r}; "
                "use '<service>.<capability>', e.g. 'sheets.write'"
            )
        self.func = func
        self.kind = OperationKind(kind)
        self.permission = permission
        self.args_model = args
        self.js_name = name or to_camel(func.__name__)
        doc = description if description is not None else (func.__doc__ or "")
        self.description = " ".join(doc.split())
        self.reconcile_func: Reconciler | None = None
        self.poll_func: Reconciler | None = None
        self.cancel_func: Reconciler | None = None
        self.attribute = func.__name__
        if (key_fields or timeout) and self.kind is not OperationKind.DURABLE:
            raise InternalError(
                f"operation {func.__name__!r} is a {self.kind.value}; only durable operations "
                "declare key_fields and a timeout"
            )
        self.key_fields = tuple(key_fields)
        self.timeout = timeout
        self.result_schema: dict[str, Any] | None = None if result is None else dict(result)
        if timeout is not None:
            from keep_sdk.contract.durable import parse_duration

            parse_duration(timeout)

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    def __get__(self, instance: object | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return MethodType(self.func, instance)

    def reconciler(self, func: Reconciler) -> Reconciler:
        """Decorate the method that checks, by idempotency key, whether the mutation happened."""
        if self.kind is not OperationKind.MUTATION:
            raise InternalError(
                f"operation {self.js_name!r} is a {self.kind.value}; only mutations reconcile"
            )
        self.reconcile_func = func
        return func

    def poller(self, func: Reconciler) -> Reconciler:
        """Decorate the method that asks a durable operation's external work how it is going."""
        self._require_durable("poll")
        self.poll_func = func
        return func

    def canceller(self, func: Reconciler) -> Reconciler:
        """Decorate the best-effort method that cancels a durable operation's external work."""
        self._require_durable("cancel")
        self.cancel_func = func
        return func

    def _require_durable(self, what: str) -> None:
        if self.kind is not OperationKind.DURABLE:
            raise InternalError(
                f"operation {self.js_name!r} is a {self.kind.value}; only durable operations {what}"
            )

    @property
    def reconcilable(self) -> bool:
        """Whether an uncertain outcome of this mutation can be checked."""
        return self.reconcile_func is not None

    def parse(self, raw: Any, *, connector: str) -> ArgsT:
        """Validate raw script arguments; `InvalidArguments` lists every problem readably.

        Unknown fields are refused whatever the model's own ``extra`` setting, so a
        misspelt argument never passes silently.
        """
        subject = f"arguments of ctx.{connector}.{self.js_name}"
        if raw is None:
            raw = {}
        if isinstance(raw, BaseModel):
            raw = raw.model_dump(by_alias=True)
        problems: list[str] = []
        parsed: ArgsT | None = None
        try:
            parsed = self.args_model.model_validate(raw)
        except ValidationError as exc:
            problems = explain_validation_error(exc)
        if isinstance(raw, dict):
            known = self._field_names
            for key in raw:
                line = f"`{key}` is not a known field; remove it"
                if key not in known and line not in problems:
                    problems.append(line)
        if problems or parsed is None:
            raise InvalidArguments(
                f"invalid {subject}:\n  " + "\n  ".join(problems),
                problems=problems,
            )
        return parsed

    @property
    def _field_names(self) -> set[str]:
        names = set()
        for name, field in self.args_model.model_fields.items():
            names.add(name)
            if field.alias:
                names.add(field.alias)
        return names

    def manifest(self) -> OperationManifest:
        """This operation as the manifest shows it."""
        from keep_sdk.contract.manifest import OperationManifest

        return OperationManifest(
            name=self.js_name,
            kind=self.kind,
            permission=self.permission,
            description=self.description,
            arguments=self.args_model.model_json_schema(by_alias=True),
            result=self.result_schema,
            reconcilable=self.reconcilable,
            durable=self.declaration if self.kind is OperationKind.DURABLE else None,
        )

    @property
    def declaration(self) -> DurableDeclaration:
        """The durable semantics this operation declares now (key fields, park timeout)."""
        from keep_sdk.contract.manifest import DurableDeclaration

        return DurableDeclaration(key_fields=list(self.key_fields), timeout=self.timeout)


def operation(
    *,
    kind: OperationKind | str,
    permission: str,
    args: type[ArgsT],
    name: str | None = None,
    description: str | None = None,
    key_fields: tuple[str, ...] = (),
    timeout: str | None = None,
    result: Mapping[str, Any] | None = None,
) -> Callable[[Handler], Operation[ArgsT]]:
    """Declare a connector method as an operation scripts may call.

    `name` is the JS name (default: the method name in camelCase), `kind` one of
    ``read``, ``read_by_id``, ``mutation``, ``durable``, `permission` what a
    workflow must be granted, `args` the pydantic model of the single argument
    object; a durable operation may declare `key_fields` and a `timeout`; `result` is
    the JSON Schema of what it returns (shown in the manifest, checked by the validator).
    """

    def decorate(func: Handler) -> Operation[ArgsT]:
        return Operation(
            func,
            kind=OperationKind(kind),
            permission=permission,
            args=args,
            name=name,
            description=description,
            key_fields=key_fields,
            timeout=timeout,
            result=result,
        )

    return decorate
