"""Recording stand-ins: in a case, every connector that is not a double answers from seed data.

A stand-in has the real connector's operations (their kinds, permissions, argument
checks, reconcile and durable declarations: the very `Operation` objects, so the
validator, the frozen-manifest check and the argument errors are the installation's),
but it never calls the service: a read answers from the case's ``answers``, a
mutation or durable operation is recorded and answers from ``results``.

`StandInConnectors` wraps an installation's connectors: doubles pass through, a
connector named in `live` is the real one, and every other one is replaced by its
stand-in the first time it is asked for. The real connector is built then, once,
for its manifest (an MCP server is started to list its tools, and called no
further); a connector the case never asks for is never built.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, ClassVar, cast

from pydantic import BaseModel, JsonValue, ValidationError

from keep_sdk.cases._delegate import DelegatingConnectors
from keep_sdk.cases._model import Answer, StandInSeed
from keep_sdk.cases._result import is_subset
from keep_sdk.connectors import Connector, ConnectorManifest, ConnectorSet, Manifest, Operation
from keep_sdk.connectors.builtin import ServiceDouble
from keep_sdk.contract.durable import Done, DurableAnswer, InvocationContext, Pending
from keep_sdk.errors import ConfigurationError, InternalError, PreconditionFailed
from keep_sdk.model import OperationKind, ReconcileOutcome, ReconcileStatus

__all__ = ["StandIn", "StandInConnectors", "stand_in_for"]

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_MISSING = object()
_DEFAULT_RESULT: dict[str, JsonValue] = {}

Effect = dict[str, Any]


def _answer(seeded: Any, arguments: JsonValue) -> Any:
    """The seeded answer for a call with `arguments`, or `_MISSING`."""
    if isinstance(seeded, list) and seeded and all(isinstance(a, Answer) for a in seeded):
        for rule in cast(list[Answer], seeded):
            if rule.when is None or is_subset(rule.when, arguments):
                return rule.result
        return _MISSING
    return seeded


def _json(arguments: BaseModel) -> JsonValue:
    dumped: JsonValue = arguments.model_dump(mode="json", by_alias=True)
    return dumped


class StandIn(Connector):
    """The recording stand-in of one connector; made by `stand_in_for`.

    `seed` is what it answers from (replaced when a step seeds it again); `effects`
    lists the mutations and durable starts it recorded, oldest first, like a
    double's; `problems` says what made the case fail (a read with no answer, a
    seeded operation the connector does not have).
    """

    real_manifest: ClassVar[ConnectorManifest]

    def __init__(self, seed: StandInSeed, where: str) -> None:
        self.where = where
        self.recorded: list[Effect] = []
        self.problems: list[str] = []
        self.seed = seed

    @classmethod
    def manifest(cls) -> ConnectorManifest:
        """The real connector's manifest, as it was when the stand-in was made."""
        return cls.real_manifest

    @property
    def seed(self) -> StandInSeed:
        """What the stand-in answers from."""
        return self._seed

    @seed.setter
    def seed(self, seed: StandInSeed) -> None:
        self._seed = seed
        self._check_seed()

    def effects(self, operation: str | None = None) -> list[Effect]:
        """Recorded mutations and durable starts, oldest first, optionally of one operation."""
        return [e for e in self.recorded if operation is None or e["operation"] == operation]

    def invoke(
        self, js_name: str, arguments: Any, *, idempotency_key: str | None = None
    ) -> JsonValue:
        """A read's seeded answer (`PreconditionFailed` when there is none), or a mutation
        recorded with its seeded result (default ``{}``); arguments are checked first."""
        op = self.operation(js_name)
        if op.kind is OperationKind.DURABLE:
            raise InternalError(
                f"ctx.{self.name}.{js_name} is durable; the host calls start(), never invoke()"
            )
        args = _json(op.parse(arguments, connector=self.name))
        if op.kind is OperationKind.MUTATION:
            if not idempotency_key:
                raise InternalError(
                    f"ctx.{self.name}.{js_name} is a mutation and was invoked without an "
                    "idempotency key"
                )
            result = self._result(js_name, args)
            self._record(js_name, idempotency_key, args, result)
            return result
        found = _answer(self._seed.answers.get(js_name, _MISSING), args)
        if found is _MISSING:
            given = "" if js_name not in self._seed.answers else " matching these arguments"
            message = (
                f"no answer seeded for {self.name}.{js_name}{given} in {self.where}; add "
                f"connectors: {{{self.name}: {{answers: {{{js_name}: ...}}}}}} (or list "
                f"{self.name} in `live` to call the service)"
            )
            if message not in self.problems:
                self.problems.append(message)
            raise PreconditionFailed(message)
        return cast(JsonValue, found)

    def start(self, js_name: str, arguments: Any, invocation: InvocationContext) -> DurableAnswer:
        """Record the durable operation's start (once per invocation); `Done` with its seeded
        result, else `Pending` until a ``notify`` step delivers one."""
        op = self._durable(js_name)
        args = _json(op.parse(arguments, connector=self.name))
        seeded = _answer(self._seed.results.get(js_name, _MISSING), args)
        result = None if seeded is _MISSING else cast(JsonValue, seeded)
        if not any(e["idempotencyKey"] == invocation.invocation_id for e in self.recorded):
            self._record(js_name, invocation.invocation_id, args, result)
        if seeded is _MISSING:
            return Pending(token=invocation.token)
        return Done(ok=True, result=result)

    def poll(self, js_name: str, arguments: Any, invocation: InvocationContext) -> DurableAnswer:
        """`Done` with the seeded result, else still `Pending`."""
        op = self._durable(js_name)
        args = _json(op.parse(arguments, connector=self.name))
        seeded = _answer(self._seed.results.get(js_name, _MISSING), args)
        if seeded is _MISSING:
            return Pending(token=invocation.token)
        return Done(ok=True, result=cast(JsonValue, seeded))

    def cancel(self, js_name: str, arguments: Any, invocation: InvocationContext) -> str:
        """Nothing to cancel: no service was called."""
        self._durable(js_name)
        return "cancelled the stand-in's work; no service was called"

    def reconcile(self, js_name: str, arguments: Any, idempotency_key: str) -> ReconcileOutcome:
        """Applied (with its result) when a mutation with `idempotency_key` was recorded."""
        op = self.operation(js_name)
        if op.reconcile_func is None:
            raise InternalError(f"ctx.{self.name}.{js_name} has no reconcile method")
        op.parse(arguments, connector=self.name)
        for effect in self.effects(js_name):
            if effect["idempotencyKey"] == idempotency_key:
                return ReconcileOutcome(status=ReconcileStatus.APPLIED, result=effect["result"])
        return ReconcileOutcome(
            status=ReconcileStatus.FAILED,
            detail=f"the stand-in recorded no {js_name} with idempotency key {idempotency_key}",
        )

    def _result(self, js_name: str, args: JsonValue) -> JsonValue:
        seeded = _answer(self._seed.results.get(js_name, _MISSING), args)
        return dict(_DEFAULT_RESULT) if seeded is _MISSING else cast(JsonValue, seeded)

    def _record(self, js_name: str, key: str, args: JsonValue, result: JsonValue) -> None:
        self.recorded.append(
            {"operation": js_name, "idempotencyKey": key, "params": args, "result": result}
        )

    def _check_seed(self) -> None:
        kinds = {op.name: op.kind for op in self.real_manifest.operations}
        wanted = {
            "answers": ("read", {OperationKind.READ}),
            "results": ("mutation or durable operation", set(OperationKind) - {OperationKind.READ}),
        }
        for field, names in (("answers", self._seed.answers), ("results", self._seed.results)):
            what, allowed = wanted[field]
            fitting = sorted(n for n, k in kinds.items() if k in allowed)
            for name in names:
                if kinds.get(name) in allowed:
                    continue
                close = difflib.get_close_matches(name, fitting, n=1)
                hint = f"did you mean {close[0]}? " if close else ""
                message = (
                    f"connectors.{self.name}.{field}.{name}: {self.name} has no {what} "
                    f"{name!r}; {hint}its {what}s: {', '.join(fitting) or 'none'}"
                )
                if message not in self.problems:
                    self.problems.append(message)


def stand_in_for(real: Connector, seed: StandInSeed, *, where: str) -> StandIn:
    """The stand-in of `real`: its manifest and `Operation`s, answering from `seed`; `where`
    names the case in messages."""
    manifest = real.manifest()
    operations: dict[str, Operation[Any]] = {
        op.name: real.operation(op.name) for op in manifest.operations
    }
    made = cast(
        type[StandIn],
        type(
            f"StandIn[{real.name}]",
            (StandIn,),
            {"name": real.name, "description": manifest.description, "__module__": __name__},
        ),
    )
    made.operations = operations
    made.real_manifest = manifest
    return made(seed, where)


class StandInConnectors(DelegatingConnectors):
    """An installation's connectors as a case sees them: doubles as they are, the `live`
    ones real, every other one a `StandIn` made when first asked for.

    `manifest` holds the connectors at hand (doubles, plugin instances, stand-ins
    made) and those a deployed script spells (`use`); a ``keep.toml`` connector no
    script names is never built.
    """

    def __init__(self, inner: ConnectorSet) -> None:
        super().__init__(inner)
        self.live: frozenset[str] = frozenset()
        self.where = "the case"
        self._seeds: dict[str, StandInSeed] = {}
        self._made: dict[str, StandIn] = {}
        self._used: set[str] = set()

    def __getitem__(self, name: str) -> Connector:
        made = self._made.get(name)
        if made is not None:
            return made
        real = self.inner[name]
        if name in self.live or isinstance(real, ServiceDouble):
            return real
        standin = stand_in_for(real, self._seeds.get(name, StandInSeed()), where=self.where)
        self._made[name] = standin
        return standin

    def built(self) -> dict[str, Connector]:
        """The connectors at hand, stand-ins in place of the real ones; builds nothing new."""
        return {name: self[name] for name in self.inner.built()}

    def manifest(self) -> Manifest:
        """The manifest of the connectors at hand and of those a deployed script spells."""
        at_hand = self.inner.built()
        return Manifest(
            connectors=[
                self[name].manifest() for name in self if name in at_hand or name in self._used
            ]
        )

    def use(self, source: str) -> None:
        """Note the connectors `source` spells (as ``ctx.crm``, ``const { crm } = ctx``...):
        their manifests join `manifest`, built when it is next read."""
        self._used |= set(_IDENTIFIER.findall(source)) & set(self)

    def stands_in(self, name: str) -> bool:
        """Whether `name` is (or will be) a stand-in: a connector, not live, not a double."""
        if name not in self or name in self.live:
            return False
        return not isinstance(self.inner.built().get(name), ServiceDouble)

    def set_live(self, names: list[str], *, source: str) -> None:
        """Make `names` call their real service; each must be a connector that is not a
        double (`ConfigurationError` naming `source` otherwise)."""
        for name in names:
            if name not in self:
                close = difflib.get_close_matches(name, list(self), n=1)
                hint = f"did you mean {close[0]}? " if close else ""
                raise ConfigurationError(
                    f"{source}: live: there is no connector {name!r}; {hint}"
                    f"connectors: {', '.join(self)}"
                )
            if isinstance(self.inner.built().get(name), ServiceDouble):
                raise ConfigurationError(
                    f"{source}: live: {name!r} is a double, which never calls a service; "
                    "remove it from `live`"
                )
        self.live = frozenset(names)

    def seed(self, name: str, data: Any, *, replace: bool, source: str) -> None:
        """Give the stand-in of `name` its answers and results (`StandInSeed`); merged by
        operation into what it has unless `replace`. `ConfigurationError` for a bad shape.

        A live connector has no stand-in: its seed is checked and kept, but not used."""
        try:
            seed = data if isinstance(data, StandInSeed) else StandInSeed.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            raise ConfigurationError(
                f"{source}: {name} is not a double, so its seed is "
                f"{{answers: {{read: ...}}, results: {{mutation: ...}}}} ({problems})"
            ) from None
        if not replace and name in self._seeds:
            old = self._seeds[name]
            seed = StandInSeed(
                answers={**old.answers, **seed.answers}, results={**old.results, **seed.results}
            )
        self._seeds[name] = seed
        made = self._made.get(name)
        if made is not None:
            made.seed = seed

    def effects(self, name: str, operation: str | None = None) -> list[Effect]:
        """What the stand-in of `name` recorded (nothing when it was never made)."""
        if name in self.live:
            raise ConfigurationError(
                f"effects: {name} is live, so what it did happened at the service; "
                "keep test cannot count it"
            )
        made = self._made.get(name)
        return [] if made is None else made.effects(operation)

    def stand_ins(self) -> list[StandIn]:
        """The stand-ins made so far."""
        return list(self._made.values())

    def problems(self) -> list[str]:
        """What made the case fail: reads with no answer, seeds of unknown operations."""
        return [p for made in self._made.values() for p in made.problems]
