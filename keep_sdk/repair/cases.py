"""The shape of a workflow test file (``*.keep.yaml``) and reading it with clear errors.

```yaml
workflow: invoices.js              # the script, relative to this file
grants: [gmail.read, sheets.write] # default: every permission the built-in doubles declare
connectors:                        # seed data of the recording doubles, for every case
  gmail: {messages: [...]}
cases:
  - name: an invoice becomes a row
    connectors: {gmail: {messages: [...]}}   # this case's seed (replaces the file's, per connector)
    steps:                         # default: one `run`
      - publish: {topic: invoice.received, messageId: m1, title: "…", payload: {…}}
      - run: {}                    # run until nothing is due
      - advance: 300               # the clock moves 300 s, then run
      - fault: {connector: sheets, kind: transient, operation: appendRow}
      - act: {action: grant, permission: sheets.write}
    expect:                        # only what is given is checked
      mutations:                   # every mutation the runs asked for, in order
        - call: sheets.appendRow
          arguments: {spreadsheetId: invoices}      # a subset of the arguments
          status: applied
      publishes:                   # every event a run published, in order
        - {topic: row.added, messageId: "row:m1", payload: {row: 1}}
      state: {addRow: null}        # handler → its final state (whole)
      runs: {committed: 3}         # run status → count
```
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from keep_sdk.errors import ConfigurationError

__all__ = [
    "ActStep",
    "CaseExpect",
    "CaseFile",
    "ExpectedMutation",
    "ExpectedPublish",
    "FaultStep",
    "PublishStep",
    "TestCase",
    "TestStep",
    "load_case_file",
    "parse_case_file",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class PublishStep(_Model):
    """An event arrives from outside the workflow."""

    topic: str
    message_id: str = Field(alias="messageId")
    title: str
    payload: JsonValue = None


class FaultStep(_Model):
    """The next `times` calls of a double's `operation` (any when None) fail like the service."""

    connector: str
    kind: Literal[
        "transient", "permission_denied", "failure", "timeout_before_effect", "timeout_after_effect"
    ]
    operation: str | None = None
    times: int = Field(default=1, ge=1)


class ActStep(_Model):
    """A person's action: ``grant``/``revoke`` a permission, ``skip_event`` (topic, messageId),
    or ``try_again``/``didnt_happen``/``skip``/``retry`` on the latest run that waits or failed."""

    action: Literal["grant", "revoke", "skip_event", "try_again", "didnt_happen", "skip", "retry"]
    permission: str | None = None
    topic: str | None = None
    message_id: str | None = Field(default=None, alias="messageId")


class TestStep(_Model):
    """One step; exactly one field is set."""

    __test__ = False

    publish: PublishStep | None = None
    run: dict[str, Any] | None = Field(default=None, description="Run until nothing is due: {}.")
    advance: float | None = Field(default=None, ge=0, description="Seconds; then run.")
    fault: FaultStep | None = None
    act: ActStep | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> TestStep:
        given = [name for name, value in self if value is not None]
        if len(given) != 1:
            raise ValueError(
                "a step has exactly one of publish, run, advance, fault, act; "
                f"this one has: {', '.join(given) or 'none'}"
            )
        return self


class ExpectedMutation(_Model):
    """A mutation a run asked for: `call` is ``connector.operation``; `arguments` a subset."""

    call: str
    arguments: dict[str, JsonValue] | None = None
    status: Literal["applied", "failed", "in_flight", "needs_reconcile", "indeterminate"] | None = (
        None
    )


class ExpectedPublish(_Model):
    """An event a run published; `payload` is a subset."""

    topic: str
    message_id: str | None = Field(default=None, alias="messageId")
    title: str | None = None
    payload: JsonValue = None


class CaseExpect(_Model):
    """What the case expects; only what is given is checked."""

    mutations: list[ExpectedMutation] | None = None
    publishes: list[ExpectedPublish] | None = None
    state: dict[str, JsonValue] | None = None
    runs: dict[str, int] | None = None


class TestCase(_Model):
    """One case: its seed data, its steps and what it expects."""

    __test__ = False

    name: str = Field(min_length=1)
    connectors: dict[str, dict[str, Any]] = Field(default_factory=dict)
    grants: list[str] | None = None
    steps: list[TestStep] = Field(default_factory=lambda: [TestStep(run={})])
    expect: CaseExpect = Field(default_factory=CaseExpect)


class CaseFile(_Model):
    """A ``*.keep.yaml`` file: the workflow under test and its cases."""

    workflow: str = Field(description="Path of the script, relative to the case file.")
    grants: list[str] | None = None
    connectors: dict[str, dict[str, Any]] = Field(default_factory=dict)
    cases: list[TestCase] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> CaseFile:
        names = [case.name for case in self.cases]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"case names must be unique; repeated: {', '.join(repeated)}")
        return self


def _fields(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model whose field set applies at `loc` (the location of an unknown key)."""
    model: type[BaseModel] = CaseFile
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        info = next(
            (i for n, i in model.model_fields.items() if part in (n, i.alias)),
            None,
        )
        if info is None:
            return None
        found = _inner_model(info.annotation)
        if found is None:
            return None
        model = found
    return model


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _where(loc: tuple[int | str, ...], raw: Any) -> str:
    parts: list[str] = []
    node = raw
    for part in loc:
        if isinstance(part, int):
            label = None
            if isinstance(node, list) and part < len(node) and isinstance(node[part], dict):
                label = node[part].get("name")
            parts.append(f"[{part}]" + (f" ({label!r})" if label else ""))
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            parts.append(("." if parts else "") + part)
            node = node.get(part) if isinstance(node, dict) else None
    return "".join(parts) or "(top level)"


def _explain(exc: ValidationError, raw: Any) -> list[str]:
    errors = exc.errors(include_url=False)
    meant: set[tuple[int | str, ...]] = set()
    lines: list[tuple[tuple[int | str, ...], str]] = []
    for error in errors:
        loc = tuple(error["loc"])
        where = _where(loc, raw)
        if error["type"] == "extra_forbidden":
            model = _model_at(loc)
            known = _fields(model) if model else []
            close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            choices = f" (known: {', '.join(known)})" if known and not close else ""
            if close:
                meant.add((*loc[:-1], close[0]))
            lines.append((loc, f"`{where}` is not a known field{hint}{choices}"))
        elif error["type"] == "missing":
            lines.append((loc, f"`{where}` is required but missing"))
        else:
            shown = repr(error.get("input"))
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            lines.append((loc, f"`{where}`: {error['msg']} (got {shown})"))
    return [
        text for loc, text in lines if not (text.endswith("required but missing") and loc in meant)
    ]


def parse_case_file(text: str, *, name: str = "<cases>") -> CaseFile:
    """Check the YAML `text` of a case file; `ConfigurationError` names every problem."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{name} is not valid YAML: {exc}") from None
    try:
        return CaseFile.model_validate(raw)
    except ValidationError as exc:
        problems = _explain(exc, raw)
        if len(problems) == 1:
            raise ConfigurationError(f"{name}: {problems[0]}") from None
        listed = "\n  ".join(problems)
        raise ConfigurationError(f"{name} has {len(problems)} problems:\n  {listed}") from None


def load_case_file(path: Path) -> CaseFile:
    """Read and check the case file at `path` (see `parse_case_file`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_case_file(text, name=str(path))
