"""Connectors whose operations are declared in configuration rather than in Python.

An HTTP API or a SQL database has no fixed operations: ``keep.toml`` declares
them (name, kind, permission, argument JSON Schema). `ConfiguredConnector.define`
turns such declarations into a `Connector` subclass for one configured instance,
so the runtime, the validator's manifest and ``keep connectors`` see them like
any other operation. Every error message and result leaving a configured
connector is passed through `redact` with the instance's secrets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import BaseModel, JsonValue, RootModel

from keep_sdk.connectors.base import Connector
from keep_sdk.connectors.operation import Operation
from keep_sdk.connectors.secrets import Redactor, Secret
from keep_sdk.errors import ConnectorError, InternalError, InvalidArguments, KeepError
from keep_sdk.model import OperationKind, ReconcileOutcome

if TYPE_CHECKING:
    from keep_sdk.contract.manifest import OperationManifest

__all__ = [
    "ConfiguredConnector",
    "ConnectorType",
    "JsonArguments",
    "OperationSpec",
    "SchemaOperation",
    "check_arguments_schema",
    "check_result_schema",
]


class JsonArguments(RootModel[dict[str, JsonValue]]):
    """The argument object of a configured operation, checked against its JSON Schema."""


def check_arguments_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` as an argument schema: a valid JSON Schema of an object, closed by default.

    ``additionalProperties`` defaults to false, so a misspelt argument is refused
    rather than ignored. Raises ``ValueError`` saying what is wrong.
    """
    closed = {"type": "object", "additionalProperties": False, **schema}
    if closed.get("type") != "object":
        raise ValueError('an argument schema must describe an object: type = "object"')
    return _valid_schema(closed)


def check_result_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` as a result schema: any valid JSON Schema. Raises ``ValueError`` saying why not."""
    return _valid_schema(dict(schema))


def _valid_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` if it is a valid JSON Schema (jsonschema is imported only when one is read)."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"not a valid JSON Schema: {exc.message}") from None
    return schema


def _where(path: Sequence[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class SchemaOperation(Operation[JsonArguments]):
    """An operation whose arguments are checked by a JSON Schema instead of a pydantic model."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        kind: OperationKind,
        permission: str,
        schema: Mapping[str, Any],
        name: str,
        description: str = "",
        result: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            func,
            kind=kind,
            permission=permission,
            args=JsonArguments,
            name=name,
            description=description,
            result=result,
        )
        from jsonschema import Draft202012Validator

        self.schema = check_arguments_schema(schema)
        self._validator = Draft202012Validator(self.schema)

    def parse(self, raw: Any, *, connector: str) -> JsonArguments:
        """Check raw script arguments against the schema; `InvalidArguments` lists each problem."""
        if raw is None:
            raw = {}
        if isinstance(raw, BaseModel):
            raw = raw.model_dump(mode="json", by_alias=True)
        problems: list[str] = []
        if not isinstance(raw, dict):
            problems.append(f"expected an object of arguments, got {type(raw).__name__}")
        else:
            for error in sorted(self._validator.iter_errors(raw), key=lambda e: list(e.path)):
                where = _where(list(error.path))
                if error.validator == "additionalProperties":
                    known = set(self.schema.get("properties", {}))
                    for key in raw if not error.path else []:
                        if key not in known:
                            problems.append(f"`{key}` is not a known field; remove it")
                elif error.validator == "required" and not error.path:
                    missing = str(error.message).split("'")[1] if "'" in error.message else "?"
                    problems.append(f"`{missing}` is required but missing")
                else:
                    problems.append(f"`{where or '(value)'}`: {error.message}")
        if problems:
            raise InvalidArguments(
                f"invalid arguments of ctx.{connector}.{self.js_name}:\n  " + "\n  ".join(problems),
                problems=problems,
            )
        return JsonArguments.model_validate(raw)

    def manifest(self) -> OperationManifest:
        """This operation with its configured JSON Schema."""
        from keep_sdk.contract.manifest import OperationManifest

        return OperationManifest(
            name=self.js_name,
            kind=self.kind,
            permission=self.permission,
            description=self.description,
            arguments=self.schema,
            result=self.result_schema,
            reconcilable=self.reconcilable,
            durable=self.declaration if self.kind is OperationKind.DURABLE else None,
        )


@dataclass(frozen=True)
class OperationSpec:
    """What a configured connector needs to declare one operation."""

    name: str
    kind: OperationKind
    permission: str
    arguments: Mapping[str, Any]
    description: str = ""
    reconcilable: bool = False
    result: Mapping[str, Any] | None = None


def _redacted_json(value: JsonValue, redact: Redactor) -> JsonValue:
    if not redact:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted_json(v, redact) for v in value]
    if isinstance(value, dict):
        return {redact(k): _redacted_json(v, redact) for k, v in value.items()}
    return value


class ConfiguredConnector(Connector):
    """Base of connectors declared in configuration (HTTP, SQL).

    A subclass implements `call_operation` and `reconcile_operation`; `define`
    makes the per-instance class with one `SchemaOperation` per `OperationSpec`.
    `secrets` are the instance's credentials: no error message, exception or
    result leaves `invoke` or `reconcile` with one of their values in it.
    """

    secrets: ClassVar[tuple[Secret, ...]] = ()
    redact: ClassVar[Redactor] = Redactor(())

    @classmethod
    def define(
        cls,
        name: str,
        specs: Sequence[OperationSpec],
        *,
        description: str = "",
        secrets: Sequence[Secret] = (),
    ) -> type[Self]:
        """A subclass of `cls` named `name` whose operations are `specs`."""
        namespace: dict[str, Any] = {
            "name": name,
            "description": description,
            "secrets": tuple(secrets),
            "redact": Redactor(secrets),
            "__doc__": description,
            "__module__": cls.__module__,
        }
        for spec in specs:
            op = SchemaOperation(
                _caller(spec.name),
                kind=spec.kind,
                permission=spec.permission,
                schema=spec.arguments,
                name=spec.name,
                description=spec.description,
                result=spec.result,
            )
            if spec.reconcilable and spec.kind is OperationKind.MUTATION:
                op.reconciler(_reconciler(spec.name))
            namespace[f"op_{spec.name}"] = op
        return type(f"{cls.__name__}[{name}]", (cls,), namespace)

    def call_operation(
        self, js_name: str, arguments: dict[str, JsonValue], *, idempotency_key: str | None
    ) -> JsonValue:
        """Perform `js_name` with checked `arguments`; raise a `ConnectorError` to classify."""
        raise NotImplementedError

    def reconcile_operation(
        self, js_name: str, arguments: dict[str, JsonValue], idempotency_key: str
    ) -> ReconcileOutcome:
        """Whether the mutation `js_name` with `idempotency_key` happened."""
        raise NotImplementedError

    def invoke(
        self, js_name: str, arguments: Any, *, idempotency_key: str | None = None
    ) -> JsonValue:
        """`Connector.invoke`, with secrets removed from the result and from any error."""
        try:
            result = super().invoke(js_name, arguments, idempotency_key=idempotency_key)
        except KeepError as exc:
            raise self._redacted(exc) from None
        return _redacted_json(result, self.redact)

    def reconcile(self, js_name: str, arguments: Any, idempotency_key: str) -> ReconcileOutcome:
        """`Connector.reconcile`, with secrets removed from the outcome and from any error."""
        try:
            outcome = super().reconcile(js_name, arguments, idempotency_key)
        except KeepError as exc:
            raise self._redacted(exc) from None
        return outcome.model_copy(
            update={
                "result": _redacted_json(outcome.result, self.redact),
                "detail": self.redact(outcome.detail) if outcome.detail else None,
            }
        )

    def _guarded(self, method: Any, args: BaseModel, **kwargs: Any) -> Any:
        try:
            return method(args, **kwargs)
        except (ConnectorError, InvalidArguments):
            raise
        except Exception as exc:
            raise InternalError(
                f"connector {self.name!r} raised {type(exc).__name__}: {exc}"
            ) from exc

    def _redacted(self, exc: KeepError) -> KeepError:
        exc.message = self.redact(exc.message)
        exc.args = (exc.message,)
        problems = getattr(exc, "problems", None)
        if isinstance(problems, list):
            exc.problems = [self.redact(p) for p in problems]  # type: ignore[attr-defined]
        exc.__cause__ = None
        exc.__context__ = None
        return exc

    def close(self) -> None:
        """Release connections; the instance is not used afterwards."""


def _caller(js_name: str) -> Callable[..., JsonValue]:
    def call(
        self: ConfiguredConnector, args: JsonArguments, *, idempotency_key: str | None = None
    ) -> JsonValue:
        return self.call_operation(js_name, args.root, idempotency_key=idempotency_key)

    call.__name__ = f"op_{js_name}"
    return call


def _reconciler(js_name: str) -> Callable[..., ReconcileOutcome]:
    def check(self: ConfiguredConnector, args: JsonArguments, key: str) -> ReconcileOutcome:
        return self.reconcile_operation(js_name, args.root, key)

    return check


@dataclass(frozen=True)
class ConnectorType:
    """One ``type = "..."`` of ``[connectors.<name>]`` in ``keep.toml``.

    `settings` is the pydantic model of the table (without ``type``), or a function
    without arguments returning it, called only when keep.toml names the type (so a
    command reading keep.toml imports the settings of the types it uses); `build`
    makes the connector instance from the instance name and validated settings.
    Plugins contribute types through the ``register_connector_types`` hook.
    """

    name: str
    settings: type[BaseModel] | Callable[[], type[BaseModel]]
    build: Callable[[str, Any], Connector]
    description: str = ""

    def settings_model(self) -> type[BaseModel]:
        """The pydantic model of the table (imported now when `settings` is a function)."""
        if isinstance(self.settings, type):
            return self.settings
        return self.settings()
