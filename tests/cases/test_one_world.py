"""Validate, ``keep test`` and run agree on which operations exist, on any installation:
plugin connectors, keep.toml connectors and the durable doubles."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from keep_sdk.app import Installation
from keep_sdk.cases import Case, CaseFile, Step, run_case
from keep_sdk.config import KeepConfig, load_config
from keep_sdk.connectors import Connector, operation
from keep_sdk.errors import ScriptRejected
from keep_sdk.model import OperationKind
from keep_sdk.plugins import KeepPlugins, hookimpl


class Note(BaseModel):
    text: str


class Notes(Connector):
    """Notes, a plugin's connector."""

    name = "notes"

    @operation(kind=OperationKind.MUTATION, permission="notes.write", args=Note, name="add")
    def add(self, args: Note, *, idempotency_key: str) -> object:
        return {"text": args.text}


class _NotesPlugin:
    @hookimpl
    def register_connectors(self) -> Sequence[type[Connector]]:
        return [Notes]


_TOML = """
[connectors.crm]
type = "http"
base_url = "http://127.0.0.1:9"
[connectors.crm.operations.createContact]
kind = "mutation"
method = "POST"
path = "/contacts"
arguments = { properties = { name = { type = "string" } }, required = ["name"] }
"""

CALLS = {
    "notes.add": "{ text: 'hi' }",
    "notes.remove": "{ text: 'hi' }",
    "crm.createContact": "{ name: 'Ana' }",
    "crm.deleteContact": "{ name: 'Ana' }",
    "approvals.request": "{ to: 'ana@example.com', subject: 'Sign' }",
    "approvals.withdraw": "{ to: 'ana@example.com' }",
    "jobs.submit": "{ name: 'check' }",
    "jobs.cancel": "{ name: 'check' }",
    "ghost.call": "{}",
}


def _script(call: str) -> str:
    connector, _, op = call.partition(".")
    return f"""
export default Keep.workflow({{
  name: "random",
  topics: {{ "thing.happened": {{}} }},
  consumers: {{
    act: Keep.consumer({{
      subscribe: ["thing.happened"],
      async prepare(ctx, state) {{
        const [e] = await ctx.peek("thing.happened", {{ limit: 1 }});
        if (!e) return {{ reservations: [], data: {{}} }};
        return {{ reservations: [{{ topic: "thing.happened", ids: [e.messageId] }}], data: {{}},
                 ui: {{ title: "Act" }} }};
      }},
      async mutate(ctx, prepared) {{
        await ctx.{connector}.{op}({CALLS[call]});
      }},
      async next(ctx, prepared, mutationResult) {{}},
    }}),
  }},
}});
"""


def _plugins(with_plugin: bool) -> KeepPlugins:
    plugins = KeepPlugins(load_entry_points=False)
    if with_plugin:
        plugins.register(_NotesPlugin(), name="notes-plugin")
    return plugins


@settings(max_examples=30, deadline=None)
@given(
    with_plugin=st.booleans(),
    with_toml=st.booleans(),
    call=st.sampled_from(sorted(CALLS)),
)
def test_validate_keep_test_and_run_agree_on_the_operations(
    with_plugin: bool, with_toml: bool, call: str
) -> None:
    plugins = _plugins(with_plugin)
    with tempfile.TemporaryDirectory() as folder:
        config = KeepConfig()
        if with_toml:
            path = Path(folder) / "keep.toml"
            path.write_text(_TOML)
            config = load_config(path, types=plugins.connector_types())
        source = _script(call)
        with Installation.open(
            "memory://", plugins=plugins, config=config, isolation="in-process"
        ) as installation:
            manifest = installation.connectors.manifest()
            exists = any(
                c.name == call.partition(".")[0]
                and any(o.name == call.partition(".")[2] for o in c.operations)
                for c in manifest.connectors
            )
            validated = plugins.validate(source, connectors=manifest).ok
            refusal = ""
            try:
                installation.runtime.deploy(source, filename="random.js")
            except ScriptRejected as exc:
                refusal = str(exc)
            deployed = not refusal
        cases = CaseFile(workflow="random.js", cases=[Case(name="deploys", steps=[Step(run={})])])
        [result] = [
            run_case(source, case, cases, filename="random.js", plugins=plugins, config=config)
            for case in cases.cases
        ]
        tested = not any(m.what == "error" for m in result.mismatches)
    assert exists == validated == deployed == tested, (exists, validated, deployed, tested)
    if not tested:
        assert "random.js" in refusal
        assert "random.js" in result.mismatches[0].summary


def test_keep_test_runs_phases_in_worker_processes_by_default(tmp_path: Path) -> None:
    from keep_sdk.app import Installation
    from keep_sdk.repair import run_case_file
    from keep_sdk.sandbox import InProcessIsolation, ProcessIsolation

    seen: list[type] = []
    real_open = Installation.open

    def spying(*args: Any, **kwargs: Any) -> Installation:
        opened = real_open(*args, **kwargs)
        seen.append(type(opened.runtime.isolation))
        return opened

    demo = Path(__file__).parents[2] / "fixtures" / "workflows" / "demo" / "invoices.keep.yaml"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Installation, "open", spying)
        results = run_case_file(demo, ["an invoice email becomes a row and a summary"])
        assert [r.ok for r in results] == [True]
        results = run_case_file(
            demo, ["an invoice email becomes a row and a summary"], isolation="in-process"
        )
        assert [r.ok for r in results] == [True]
    assert seen == [ProcessIsolation, InProcessIsolation]
