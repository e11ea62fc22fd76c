import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk import validate
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "stateful-regexp"


def using(declaration: str, use: str, *, mark: bool = True) -> str:
    line = f"  if ({use}) await ctx.publish('in', {{ messageId: m.id, title: `Mail ${{m.id}}` }});"
    body = "for (const m of await ctx.gmail.search({})) {\n" + line + (" // here" if mark else "")
    return workflow(before=declaration, producer=body + "\n}\nreturn state;")


INVALID = [
    Case("global-test", using("const RE = /invoice/g;", "RE.test(m.subject)")),
    Case("global-ignorecase", using("const RE = /invoice/gi;", "RE.test(m.subject)")),
    Case("sticky-exec", using("const RE = /INV-\\d+/y;", "RE.exec(m.subject)")),
    Case("constructed", using("const RE = new RegExp('invoice', 'g');", "RE.test(m.body)")),
    Case("let", using("let RE = /invoice/g;", "RE.test(m.subject)")),
    Case(
        "in-helper",
        workflow(
            before="const RE = /invoice/g;\nfunction isInvoice(m) {\n  return RE.test(m.subject); // here\n}",
            producer="for (const m of await ctx.gmail.search({})) {\n  if (isInvoice(m)) await ctx.publish('in', { messageId: m.id, title: `Mail ${m.id}` });\n}\nreturn state;",
        ),
    ),
]

VALID = [
    Case("no-flag", using("const RE = /invoice/i;", "RE.test(m.subject)", mark=False)),
    Case("match", using("const RE = /invoice/g;", "m.subject.match(RE)", mark=False)),
    Case(
        "local",
        workflow(
            producer="const re = /invoice/g;\nfor (const m of await ctx.gmail.search({})) {\n  if (/invoice/g.test(m.subject)) await ctx.publish('in', { messageId: m.id, title: `Mail ${m.id}` });\n}\nreturn state;"
        ),
    ),
    Case(
        "reset",
        using("const RE = /invoice/g;", "(RE.lastIndex = 0, RE.test(m.subject))", mark=False),
    ),
    Case(
        "constructed-no-flag", using("const RE = new RegExp('x');", "RE.test(m.body)", mark=False)
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


@settings(max_examples=60, deadline=None)
@given(
    st.sets(st.sampled_from("dgimsy")).map(lambda s: "".join(sorted(s))),
    st.sampled_from(["test", "exec", "match", "search", "replace"]),
    st.booleans(),
)
def test_reported_exactly_for_global_or_sticky_with_test_or_exec(
    flags: str, method: str, literal: bool
) -> None:
    declaration = (
        f"const RE = /inv/{flags};" if literal else f"const RE = new RegExp('inv', '{flags}');"
    )
    use = f"RE.{method}(m.subject)" if method in ("test", "exec") else f"m.subject.{method}(RE)"
    if method == "replace":
        use = "m.subject.replace(RE, '')"
    report = validate(using(declaration, use, mark=False))
    hazard = method in ("test", "exec") and bool(set(flags) & {"g", "y"})
    assert (RULE in report.rules()) == hazard
