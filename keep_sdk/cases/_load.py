"""Reading case and scenario files: one message naming every problem, with its field
path and a did-you-mean for a misspelt field."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from keep_sdk.cases._model import CaseFile, Scenario
from keep_sdk.errors import ConfigurationError

__all__ = ["load_case_file", "load_scenario", "parse_case_file", "parse_document"]

_M = TypeVar("_M", bound=BaseModel)


def _fields(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _model_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model whose field set applies at `loc` (the location of an unknown key)."""
    model = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        info = next((i for n, i in model.model_fields.items() if part in (n, i.alias)), None)
        if info is None:
            return None
        found = _inner_model(info.annotation)
        if found is None:
            return None
        model = found
    return model


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


def _explain(root: type[BaseModel], exc: ValidationError, raw: Any) -> list[str]:
    meant: set[tuple[int | str, ...]] = set()
    lines: list[tuple[tuple[int | str, ...], str]] = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        where = _where(loc, raw)
        if error["type"] == "extra_forbidden":
            model = _model_at(root, loc)
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


def parse_document(text: str, model: type[_M], *, name: str) -> _M:
    """Check the YAML `text` against `model`; `ConfigurationError` names every problem with
    its field path in `name`."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{name} is not valid YAML: {exc}") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = _explain(model, exc, raw)
        if len(problems) == 1:
            raise ConfigurationError(f"{name}: {problems[0]}") from None
        listed = "\n  ".join(problems)
        raise ConfigurationError(f"{name} has {len(problems)} problems:\n  {listed}") from None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from None


def parse_case_file(text: str, *, name: str = "<cases>") -> CaseFile:
    """Check the YAML `text` of a case file; `ConfigurationError` names every problem."""
    return parse_document(text, CaseFile, name=name)


def load_case_file(path: Path) -> CaseFile:
    """Read and check the case file at `path` (see `parse_case_file`)."""
    return parse_case_file(_read(path), name=str(path))


def load_scenario(path: Path) -> Scenario:
    """Read and check one scenario file; `ConfigurationError` names what is wrong."""
    return parse_document(_read(path), Scenario, name=f"scenario {path}")
