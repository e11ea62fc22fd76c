"""`SANDBOX_GLOBALS` is what the running sandbox's global object resolves, in every phase."""

from __future__ import annotations

import json

import pytest
from pydantic import JsonValue

from keep_sdk.contract.globals import HOST_GLOBALS, SANDBOX_GLOBALS
from keep_sdk.model import HandlerPhase
from keep_sdk.sandbox import Completed, MutationRequested, PhaseRequest, run_phase

_COLLECT = """
  const names = new Set();
  for (let o = globalThis; o !== null; o = Object.getPrototypeOf(o)) {
    for (const name of Object.getOwnPropertyNames(o)) names.add(name);
  }
  console.log(JSON.stringify([...names]));
"""

SCRIPT = f"""
export default Keep.workflow({{
  name: "globals",
  topics: {{ "t": {{}} }},
  producers: {{ p: async (ctx, state) => {{ {_COLLECT} return state; }} }},
  consumers: {{
    c: Keep.consumer({{
      subscribe: ["t"],
      async prepare(ctx, state) {{ {_COLLECT} return {{ reservations: [], data: {{}} }}; }},
      async mutate(ctx, prepared) {{ {_COLLECT} }},
      async next(ctx, prepared, mutationResult) {{ {_COLLECT} return null; }},
    }}),
  }},
}});
"""


class _Host:
    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        return None


@pytest.mark.parametrize(
    ("handler", "phase"),
    [
        ("p", HandlerPhase.PRODUCER),
        ("c", HandlerPhase.PREPARE),
        ("c", HandlerPhase.MUTATE),
        ("c", HandlerPhase.NEXT),
    ],
)
def test_sandbox_globals_are_the_contract(handler: str, phase: HandlerPhase) -> None:
    request = PhaseRequest(
        source=SCRIPT,
        handler=handler,
        phase=phase,
        subscribed_topics=("t",),
        publish_topics=("t",),
    )
    result = run_phase(request, _Host())
    assert isinstance(result.outcome, Completed | MutationRequested), result.outcome
    [line] = result.trace.console
    names = set(json.loads(line.text))
    extra = {next((p for p in HOST_GLOBALS if n.startswith(p)), n) for n in names - SANDBOX_GLOBALS}
    assert extra == HOST_GLOBALS, "the sandbox defines globals the contract lacks"
    assert SANDBOX_GLOBALS - names == set(), "the contract lists globals the sandbox lacks"
