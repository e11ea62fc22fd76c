"""reserved-name: a script that declares or names a host-reserved identifier is refused,
in every scope form."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keep_sdk.contract.globals import RESERVED_PREFIX, RETURN_MARKER
from keep_sdk.validator import validate
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "reserved-name"

INVALID = [
    Case("const", workflow(prepare="const __keepReturn = (l, c, v) => v; // here\nreturn {};")),
    Case("escaped", workflow(prepare="let \\u005f_keepReturn = 1; // here\nreturn {};")),
    Case("parameter", workflow(prepare="const f = (__keepX) => 1; // here\nreturn {};")),
    Case("reference", workflow(prepare="return { v: typeof __keepReturn }; // here")),
    Case(
        "catch", workflow(prepare="try { JSON.parse('x'); } catch (__keep) { } // here\nreturn {};")
    ),
    Case("pattern", workflow(prepare="const { a: __keepA } = { a: 1 }; // here\nreturn {};")),
    Case("class", workflow(prepare="class __keepC {} // here\nreturn {};")),
]

VALID = [
    Case(
        "property",
        workflow(prepare="const o = { __keepReturn: 1 };\nreturn { v: o.__keepReturn };"),
    ),
    Case("string", workflow(prepare="return { v: '__keepReturn' };")),
    Case("other-prefix", workflow(prepare="const __kept = 1;\nreturn { v: __kept };")),
    Case("capitalised", workflow(prepare="const __KeepReturn = 1;\nreturn { v: __KeepReturn };")),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


RESERVED = st.sampled_from([RETURN_MARKER, RESERVED_PREFIX, f"{RETURN_MARKER}_0f3a", "__keepSite"])
FORMS = {
    "var": "var {n} = 1;",
    "let": "let {n} = 1;",
    "const": "const {n} = 1;",
    "function": "function {n}() {{ return 1; }}",
    "class": "class {n} {{}}",
    "parameter": "const f = function ({n}) {{ return 1; }};",
    "arrow-parameter": "const f = ({n}) => 1;",
    "catch": "try {{ JSON.parse('x'); }} catch ({n}) {{ }}",
    "object-pattern": "const {{ {n} }} = {{ a: 1 }};",
    "renamed-pattern": "const {{ a: {n} }} = {{ a: 1 }};",
    "array-pattern": "const [{n}] = [1];",
    "default-parameter": "const f = (a, {n} = 2) => a;",
    "for-of": "for (const {n} of [1]) {{ }}",
}
MODULE_FORMS = {
    **FORMS,
    "import-alias": "import {{ x as {n} }} from 'other';",
    "import-default": "import {n} from 'other';",
    "import-namespace": "import * as {n} from 'other';",
}


def _escaped(name: str, escape: bool) -> str:
    return "\\u005f" + name[1:] if escape else name


@settings(max_examples=120, deadline=None)
@given(
    name=RESERVED,
    form=st.sampled_from(sorted(MODULE_FORMS)),
    where=st.sampled_from(["module", "handler", "helper"]),
    escape=st.booleans(),
)
def test_every_reserved_name_in_every_scope_form_is_refused(
    name: str, form: str, where: str, escape: bool
) -> None:
    if form.startswith("import"):
        where = "module"
    declaration = MODULE_FORMS[form].format(n=_escaped(name, escape))
    if where == "module":
        source = declaration + "\n" + workflow(prepare="return {};")
    elif where == "handler":
        source = workflow(prepare=declaration + "\nreturn {};")
    else:
        source = "function helper() {\n" + declaration + "\n}\n" + workflow(prepare="return {};")
    report = validate(source)
    rules = {d.rule for d in report.diagnostics}
    assert RULE in rules, (source, rules)
    assert not report.ok
