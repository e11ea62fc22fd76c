"""The analysis fails closed: past any of its budgets a script is reported, never clean.

For every budget of the handler walk (nested helper depth, steps, rounds over
functions created but never called, recursion followed once), scripts on both
sides of it and far beyond it must get either the diagnostic of the problem
they hide or ``analysis-limit``. Real scripts stay well inside the budgets.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk import validate
from tests.validator.cases import workflow
from tests.validator.rules.test_analysis_limit import fan_out, nested_functions
from tests.validator.test_rule_docs import example

SEND = 'ctx.gmail.send({ to: "a", subject: "s", body: "b" })'
POST = 'ctx.slack.postMessage({ channel: "#c", text: "t" })'
FOUND = {"multiple-mutations", "analysis-limit"}
ROOT = Path(__file__).parents[2]


def helper_chain(depth: int, first: int, second: int, *, arrow: bool) -> str:
    """`mutate` calls ``h1``; each ``h<k>`` calls ``h<k+1>``; ``h<first>`` and ``h<second>``
    each make a mutation after that call (the same helper makes both when they are equal)."""
    lines = []
    for index in range(1, depth + 1):
        body = [f"await h{index + 1}(ctx);"] if index < depth else []
        body += [f"await {SEND};"] * (index == first) + [f"await {POST};"] * (index == second)
        if arrow:
            lines.append(f"const h{index} = async (ctx) => {{ {' '.join(body)} }};")
        else:
            lines.append(f"async function h{index}(ctx) {{ {' '.join(body)} }}")
    return workflow(before="\n".join(lines), mutate="await h1(ctx);")


@pytest.mark.parametrize("depth", [*range(1, 31), 64, 150])
def test_two_mutations_through_any_helper_depth_are_reported(depth: int) -> None:
    rules = validate(helper_chain(depth, depth, depth, arrow=False)).rules()
    assert rules & FOUND, f"depth {depth}: {sorted(rules)}"
    if depth <= 12:
        assert "multiple-mutations" in rules
        assert "analysis-limit" not in rules


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 80).flatmap(
        lambda depth: st.tuples(
            st.just(depth), st.integers(1, depth), st.integers(1, depth), st.booleans()
        )
    )
)
def test_two_mutations_anywhere_in_a_helper_chain_are_reported(
    shape: tuple[int, int, int, bool],
) -> None:
    depth, first, second, arrow = shape
    rules = validate(helper_chain(depth, first, second, arrow=arrow)).rules()
    assert rules & FOUND, f"{shape}: {sorted(rules)}"


STEP_SHAPES = [(2, 8), (3, 7), (3, 8), (3, 9), (3, 10), (4, 7), (4, 8), (5, 7), (6, 7)]
_step_outcomes: dict[tuple[int, int], frozenset[str]] = {}


def step_outcome(fan: int, depth: int) -> frozenset[str]:
    """Rules reported when pure helpers fanning out `fan` ways `depth` deep run before a
    helper making two mutations."""
    if (fan, depth) not in _step_outcomes:
        before = (
            fan_out(fan, depth) + f"\nasync function two(ctx) {{ await {SEND}; await {POST}; }}"
        )
        source = workflow(before=before, mutate="w0(prepared.data.x);\nawait two(ctx);")
        _step_outcomes[fan, depth] = frozenset(validate(source).rules())
    return _step_outcomes[fan, depth]


@pytest.mark.parametrize(("fan", "depth"), STEP_SHAPES)
def test_two_mutations_after_any_amount_of_work_are_reported(fan: int, depth: int) -> None:
    assert step_outcome(fan, depth) & FOUND


def test_step_shapes_cross_the_step_budget() -> None:
    outcomes = [step_outcome(fan, depth) for fan, depth in STEP_SHAPES]
    assert any("analysis-limit" not in rules for rules in outcomes)
    assert any("multiple-mutations" not in rules for rules in outcomes)


@pytest.mark.parametrize("depth", [*range(1, 5), *range(45, 56), 120])
@pytest.mark.parametrize(
    ("inner", "before", "rule"),
    [
        ("ctx[prepared.data.name]", "", "dynamic-capability"),
        ("(counter += 1)", "let counter = 0;", "shared-state"),
    ],
    ids=["computed-ctx", "module-state"],
)
def test_problems_in_any_depth_of_uncalled_functions_are_reported(
    depth: int, inner: str, before: str, rule: str
) -> None:
    source = workflow(
        before=before, mutate=f"const later = {nested_functions(depth, inner)};\nreturn 1;"
    )
    rules = validate(source).rules()
    assert rules & {rule, "analysis-limit"}, f"depth {depth}: {sorted(rules)}"


def recursion_cycle(length: int, mutation_at: int, *, mutation_first: bool) -> str:
    """`mutate` calls ``r0``; ``r<k>`` calls ``r<k+1>`` and the last calls ``r0`` again,
    guarded by a condition; ``r<mutation_at>`` makes a mutation before or after its call."""
    lines = []
    for index in range(length):
        call = f"if (n > 0) await r{(index + 1) % length}(ctx, n - 1);"
        body = [call]
        if index == mutation_at:
            body.insert(0 if mutation_first else 1, f"await {SEND};")
        lines.append(f"async function r{index}(ctx, n) {{ {' '.join(body)} }}")
    return workflow(before="\n".join(lines), mutate="await r0(ctx, prepared.data.n);")


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 14).flatmap(
        lambda length: st.tuples(st.just(length), st.integers(0, length - 1), st.booleans())
    )
)
def test_a_mutation_that_recursion_can_repeat_is_reported(shape: tuple[int, int, bool]) -> None:
    length, mutation_at, mutation_first = shape
    source = recursion_cycle(length, mutation_at, mutation_first=mutation_first)
    rules = validate(source).rules()
    assert rules & FOUND, f"{shape}: {sorted(rules)}"


OVER_BUDGET = ROOT / "fixtures" / "workflows" / "invalid" / "analysis_limit.js"
"""The one fixture written to exceed a budget."""

REAL_SCRIPTS = sorted(
    path for path in (ROOT / "fixtures" / "workflows").glob("*/*.js") if path != OVER_BUDGET
)


@pytest.mark.parametrize("path", REAL_SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixture_scripts_stay_inside_the_budgets(path: Path) -> None:
    assert "analysis-limit" not in validate(path.read_text()).rules()


def test_the_over_budget_fixture_is_reported() -> None:
    assert "analysis-limit" in validate(OVER_BUDGET.read_text()).rules()


@pytest.mark.parametrize(
    "page", sorted((ROOT / "docs" / "rules").glob("*.md")), ids=lambda p: p.stem
)
def test_docs_examples_stay_inside_the_budgets(page: Path) -> None:
    for title in ("Incorrect", "Correct"):
        if page.stem == "analysis-limit" and title == "Incorrect":
            continue
        assert "analysis-limit" not in validate(example(page.stem, title)).rules()


def test_docs_state_the_budgets_the_walk_uses() -> None:
    from keep_sdk.validator.walk.limits import MAX_HELPER_DEPTH, MAX_ROUNDS, STEP_BUDGET

    page = (ROOT / "docs" / "rules" / "analysis-limit.md").read_text()
    guide = (ROOT / "docs" / "validator.md").read_text()
    assert f"more than {MAX_HELPER_DEPTH} functions deep" in page
    assert f"more than {MAX_ROUNDS} levels deep" in page
    assert f"at most {MAX_HELPER_DEPTH} nested function calls" in page
    assert f"{STEP_BUDGET:,} steps per handler" in guide


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 6), st.integers(1, 4), st.integers(1, 5))
def test_any_step_budget_fails_closed(budget: int, work_before: int, fan: int, depth: int) -> None:
    """Whatever the budget, pure work before a helper making two mutations never hides them."""
    work = "\n".join("w0(prepared.data.x);" for _ in range(work_before))
    before = fan_out(fan, depth) + f"\nasync function two(ctx) {{ await {SEND}; await {POST}; }}"
    source = workflow(before=before, mutate=f"{work}\nawait two(ctx);")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("keep_sdk.validator.walk.calls.STEP_BUDGET", budget)
        rules = validate(source).rules()
    assert rules & FOUND, f"budget {budget}: {sorted(rules)}"


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 14),
    st.integers(1, 20).flatmap(
        lambda depth: st.tuples(
            st.just(depth), st.integers(1, depth), st.integers(1, depth), st.booleans()
        )
    ),
)
def test_any_helper_depth_bound_fails_closed(bound: int, shape: tuple[int, int, int, bool]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("keep_sdk.validator.walk.calls.MAX_HELPER_DEPTH", bound)
        depth, first, second, arrow = shape
        rules = validate(helper_chain(depth, first, second, arrow=arrow)).rules()
    assert rules & FOUND, f"bound {bound}, {shape}: {sorted(rules)}"


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 8), st.integers(1, 12))
def test_any_round_count_fails_closed(rounds: int, depth: int) -> None:
    source = workflow(
        mutate=f"const later = {nested_functions(depth, 'ctx[prepared.data.name]')};\nreturn 1;"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("keep_sdk.validator.walker.MAX_ROUNDS", rounds)
        rules = validate(source).rules()
    assert rules & {"dynamic-capability", "analysis-limit"}, f"{rounds}, {depth}: {sorted(rules)}"
