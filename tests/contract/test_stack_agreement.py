"""The validator and the sandbox agree on how deeply nested a script may be and still compile.

Both compile with ``SandboxLimits.stack_bytes`` of JS stack: the deepest nesting
the validator accepts runs in the sandbox, and one level deeper fails in both.
"""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from keep_sdk.model import HandlerPhase
from keep_sdk.sandbox import Completed, LimitFailure, PhaseRequest, run_phase
from keep_sdk.validator import validate


class _Host:
    def call(self, name: str, arguments: JsonValue) -> JsonValue:
        return None


def script(opener: str, closer: str, depth: int) -> str:
    return (
        "export default Keep.workflow({ name: 'w', topics: {}, producers: {\n"
        "  p: async (ctx, state) => {\n"
        f"    const x = {opener * depth}1{closer * depth};\n"
        "    return state;\n"
        "  },\n"
        "} });\n"
    )


def compiles(source: str) -> bool:
    return "syntax-error" not in validate(source).rules()


def deepest_accepted(opener: str, closer: str) -> int:
    low, high = 1, 20_000
    while high - low > 1:
        middle = (low + high) // 2
        if compiles(script(opener, closer, middle)):
            low = middle
        else:
            high = middle
    return low


@pytest.mark.parametrize(("opener", "closer"), [("(", ")"), ("[", "]")])
def test_validator_and_sandbox_agree_on_nesting(opener: str, closer: str) -> None:
    deepest = deepest_accepted(opener, closer)
    assert 50 < deepest < 20_000
    accepted = run_phase(
        PhaseRequest(
            source=script(opener, closer, deepest), handler="p", phase=HandlerPhase.PRODUCER
        ),
        _Host(),
    )
    assert isinstance(accepted.outcome, Completed), accepted.outcome
    refused = run_phase(
        PhaseRequest(
            source=script(opener, closer, deepest + 1), handler="p", phase=HandlerPhase.PRODUCER
        ),
        _Host(),
    )
    assert isinstance(refused.outcome, LimitFailure), refused.outcome
