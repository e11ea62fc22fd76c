"""The console's state: the opened installation, its token guard, actions and templates."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.templating import Jinja2Templates

from keep_sdk.app import Installation
from keep_sdk.console._actions import Actions
from keep_sdk.console._security import Guard
from keep_sdk.console._settings import ConsoleSettings
from keep_sdk.contract.text import visible
from keep_sdk.model import RunRecord
from keep_sdk.runtime import call_outcome, run_resolution

__all__ = ["STATIC", "Console"]

STATIC = Path(__file__).parent / "static"


def _templates() -> Jinja2Templates:
    env = Environment(
        loader=PackageLoader("keep_sdk.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=_shown,
    )
    env.filters["json"] = _pretty
    env.filters["visible"] = visible
    env.filters["run_status"] = _run_status
    env.globals["call_outcome"] = call_outcome
    return Jinja2Templates(env=env)


def _shown(value: object) -> object:
    """Every ``{{ … }}`` a template prints: a string (never `Markup` the templates built)
    with its controls and bidi overrides shown as escapes, the rule the CLI applies."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def _run_status(run: RunRecord) -> str:
    """The status a person reads for `run`: ``resolved`` for one a person's decision
    settled (stored ``failed:internal``), its stored status otherwise."""
    return "resolved" if run_resolution(run) is not None else run.status.value


def _pretty(value: object) -> str:
    import json

    return visible(json.dumps(value, indent=2, ensure_ascii=False, default=str))


@dataclass
class Console:
    """Everything a request handler needs."""

    settings: ConsoleSettings
    installation: Installation
    guard: Guard = field(init=False)
    actions: Actions = field(init=False)
    templates: Jinja2Templates = field(init=False)

    def __post_init__(self) -> None:
        self.guard = Guard(self.settings.token)
        self.actions = Actions(
            self.installation, actor=self.settings.actor, wait_s=self.settings.action_wait_s
        )
        self.templates = _templates()
