from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keep_sdk import validate
from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "implicit-code"

SEND = "await ctx.gmail.send({ to: 'a@example.com', subject: 's', body: 'b' });"

INVALID = [
    Case(
        "symbol-iterator-assigned",
        workflow(before="const list = {};\nlist[Symbol.iterator] = function* () {}; // here"),
    ),
    Case(
        "define-property-descriptor-from-a-variable",
        workflow(
            before="const d = { value: 1 };\nconst o = {};\nObject.defineProperty(o, 'x', d); // here"
        ),
    ),
    Case(
        "define-property-toJSON-value",
        workflow(
            before="const o = {};\nObject.defineProperty(o, 'toJSON', { value: () => 1 }); // here"
        ),
    ),
    Case(
        "reflect-define-property",
        workflow(before="const o = {};\nReflect.defineProperty(o, 'x', { set(v) {} }); // here"),
    ),
    Case(
        "define-getter-legacy",
        workflow(before="const o = {};\no.__defineGetter__('x', () => 1); // here"),
    ),
    Case("using", workflow(mutate="{\n  using r = { [Symbol.dispose]() {} }; // here\n}\n" + SEND)),
    Case("await-using", workflow(mutate="await using r = prepared.data; // here\n" + SEND)),
    Case(
        "disposable-stack",
        workflow(
            prepare="const s = new DisposableStack(); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "proxy",
        workflow(
            mutate="const m = new Proxy({}, { get: () => 'a' }); // here\nawait ctx.gmail.send(m);"
        ),
    ),
    Case(
        "patched-prototype",
        workflow(before="Array.prototype.map = function () { return []; }; // here"),
    ),
    Case("patched-static", workflow(before="JSON.stringify = () => '{}'; // here")),
    Case(
        "patched-object-prototype-toJSON",
        workflow(before="Object.prototype.toJSON = () => ({}); // here"),
    ),
    Case("patched-console", workflow(before="console.log = function () {}; // here")),
    Case("patched-keep", workflow(before="Keep.consumer = (c) => c; // here")),
    Case("patched-by-subscript", workflow(before="Math['random'] = () => 0.5; // here")),
    Case(
        "assign-into-prototype",
        workflow(before="Object.assign(Array.prototype, { x: 1 }); // here"),
    ),
    Case(
        "getter-making-a-ctx-call",
        workflow(
            mutate=(
                "const m = { to: 'a', subject: 's', get body() { // here\n"
                "  ctx.gmail.search({}); return 'b';\n} };\nawait ctx.gmail.send(m);"
            )
        ),
    ),
    Case(
        "toJSON-making-a-ctx-call",
        workflow(
            prepare=(
                "const d = { toJSON: () => ctx.gmail.search({}) }; // here\n"
                "return { reservations: [], data: d };"
            )
        ),
    ),
    Case(
        "class-getter-making-a-ctx-call",
        workflow(
            prepare=(
                "class Box { get v() { // here\n  return ctx.gmail.search({});\n} }\n"
                "return { reservations: [], data: { v: new Box().v } };"
            )
        ),
    ),
    Case(
        "toJSON-named-elsewhere",
        workflow(
            before="function render() { return 1; }",
            prepare="const d = {};\nd.toJSON = render; // here\nreturn { reservations: [], data: d };",
        ),
    ),
    Case(
        "symbol-species",
        workflow(
            before=(
                "class L extends Array {\n  static get [Symbol.species]() { // here\n"
                "    return Array;\n  }\n}"
            )
        ),
    ),
    Case(
        "ctx-call-in-a-sort-comparator",
        workflow(
            prepare=(
                "const xs = [2, 1].sort((a, b) => { ctx.gmail.search({}); return a - b; }); // here\n"
                "return { reservations: [], data: { xs } };"
            )
        ),
    ),
    Case(
        "ctx-call-in-a-replacer-passed-by-name",
        workflow(
            prepare=(
                "const r = (k, v) => { ctx.gmail.search({}); return v; }; // here\n"
                "const t = JSON.stringify({ a: 1 }, r);\nreturn { reservations: [], data: { t } };"
            )
        ),
    ),
    Case(
        "ctx-call-in-a-function-never-called",
        workflow(
            prepare=(
                "const later = () => ctx.gmail.search({}); // here\n"
                "return { reservations: [], data: { later: typeof later } };"
            )
        ),
    ),
]

VALID = [
    Case(
        "own-object-member-assigned", workflow(before="const JSONish = {};\nJSONish.stringify = 1;")
    ),
    Case(
        "comparison-is-not-assignment",
        workflow(next_="if (Math.PI === 3 || JSON.x == 1) console.log(1);"),
    ),
    Case(
        "own-object-member-assigned", workflow(before="const JSONish = {};\nJSONish.stringify = 1;")
    ),
    Case(
        "comparison-is-not-assignment",
        workflow(next_="if (Math.PI === 3 || JSON.x == 1) console.log(1);"),
    ),
    Case(
        "plain-data-argument",
        workflow(
            mutate="const message = { to: 'a', subject: 's', body: 'b' };\nawait ctx.gmail.send(message);"
        ),
    ),
    Case("then-chain-is-a-call", workflow(next_="await Promise.resolve(1).then((v) => v);")),
    Case("toString-called", workflow(next_="const s = (12).toString();\nconsole.log(s);")),
    Case("JSON-stringify-called", workflow(next_="console.log(JSON.stringify({ a: 1 }));")),
    Case(
        "words-in-strings-and-comments",
        workflow(
            next_="// get set using toJSON Proxy Symbol.toPrimitive\nconsole.log('get x() { toJSON }');"
        ),
    ),
    Case(
        "plain-key-values",
        workflow(
            prepare="return { reservations: [], data: { toString: 'text', valueOf: 3, then: null } };"
        ),
    ),
    Case(
        "get-as-method-name",
        workflow(before="const cache = { get(k) { return k; }, set(k, v) {} };"),
    ),
    Case(
        "get-as-a-call",
        workflow(before="const m = new Map();\nm.set('a', 1);\nconst v = m.get('a');"),
    ),
    Case(
        "data-descriptor",
        workflow(
            before="const o = {};\nObject.defineProperty(o, 'x', { value: 1, enumerable: false });"
        ),
    ),
    Case("object-create-without-descriptors", workflow(before="const o = Object.create(null);")),
    Case(
        "symbol-read",
        workflow(before="const tag = Symbol.toStringTag;\nconst it = [][Symbol.iterator];"),
    ),
    Case(
        "own-binding-named-like-a-global",
        workflow(before="const Proxy = { make: () => 1 };\nconst x = new Proxy.make();"),
    ),
    Case(
        "array-methods-called",
        workflow(next_="const xs = [1, 2].map((v) => v * 2);\nconsole.log(xs);"),
    ),
    Case(
        "getter-on-connector-argument",
        workflow(
            mutate="await ctx.gmail.send({ to: 'a', subject: 's', get body() {\n  return 'b';\n} });"
        ),
    ),
    Case(
        "getter-through-a-binding",
        workflow(
            mutate=(
                "const message = {\n  to: 'a',\n  subject: 's',\n"
                "  get body() {\n    return 'b';\n  },\n};\n"
                "await ctx.gmail.send(message);"
            )
        ),
    ),
    Case(
        "setter-at-module-level",
        workflow(before="const config = {\n  set mode(v) {\n    this.m = v;\n  },\n};"),
    ),
    Case(
        "class-getter",
        workflow(
            before="class Message {\n  get body() {\n    return 'b';\n  }\n}",
            mutate="await ctx.gmail.send(new Message());",
        ),
    ),
    Case(
        "static-getter",
        workflow(before="class Config {\n  static get limit() {\n    return 3;\n  }\n}"),
    ),
    Case(
        "toJSON-method-on-argument",
        workflow(
            mutate=(
                "await ctx.gmail.send({\n  to: 'a', subject: 's', body: 'b',\n"
                "  toJSON() {\n    return this;\n  },\n});"
            )
        ),
    ),
    Case(
        "toJSON-arrow-in-returned-object",
        workflow(prepare="return { reservations: [], data: { toJSON: () => ({}) } };"),
    ),
    Case(
        "toJSON-string-key",
        workflow(
            prepare="const d = { 'toJSON': function () { return 1; } };\nreturn { reservations: [], data: d };"
        ),
    ),
    Case(
        "toJSON-assigned",
        workflow(
            prepare="const d = {};\nd.toJSON = () => 1;\nreturn { reservations: [], data: d };"
        ),
    ),
    Case(
        "toJSON-assigned-by-subscript",
        workflow(
            prepare="const d = {};\nd['toJSON'] = () => 1;\nreturn { reservations: [], data: d };"
        ),
    ),
    Case(
        "valueOf-override",
        workflow(
            prepare="const n = { valueOf() { return 2; } };\nreturn { reservations: [], data: { n: n + 1 } };"
        ),
    ),
    Case(
        "toString-class-method",
        workflow(before="class Id {\n  toString() {\n    return 'x';\n  }\n}"),
    ),
    Case(
        "toJSON-class-field",
        workflow(before="class Row {\n  toJSON = () => ({});\n}"),
    ),
    Case(
        "thenable-returned",
        workflow(next_="return { then(resolve) { resolve(1); } };"),
    ),
    Case(
        "symbol-to-primitive",
        workflow(
            prepare="const v = { [Symbol.toPrimitive]() { return 1; } };\nreturn { reservations: [], data: { v: `${v}` } };"
        ),
    ),
    Case(
        "define-property-getter",
        workflow(
            before=(
                "const handlers = {};\n"
                "Object.defineProperty(handlers, 'send', { get() { return 1; } });"
            )
        ),
    ),
    Case(
        "define-properties",
        workflow(before="const o = {};\nObject.defineProperties(o, { x: { get: () => 1 } });"),
    ),
    Case(
        "object-create-with-accessor",
        workflow(before="const o = Object.create({}, { x: { get: () => 1 } });"),
    ),
    Case(
        "ctx-call-in-a-function-passed-by-name-to-map",
        workflow(
            prepare=(
                "const one = (id) => ctx.gmail.getById({ id });\n"
                "const found = await Promise.all(['a', 'b'].map(one));\n"
                "return { reservations: [], data: { n: found.length } };"
            )
        ),
    ),
    Case(
        "ctx-call-in-a-declared-function-passed-to-then",
        workflow(
            prepare=(
                "async function more(n) { return ctx.gmail.search({ n }); }\n"
                "const found = await Promise.resolve(1).then(more);\n"
                "return { reservations: [], data: { found } };"
            )
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)


HOOKS = ["toJSON", "valueOf", "toString", "then"]
FORMS = [
    "{ NAME() { return 1; } }",
    "{ NAME: () => 1 }",
    "{ NAME: function () { return 1; } }",
    "{ 'NAME': (x) => x }",
    "{ ['NAME']() { return 1; } }",
]
PLACES = ["argument", "returned", "module", "alias"]


def _script(hook: str, form: str, place: str) -> str:
    value = form.replace("NAME", hook)
    if place == "argument":
        return workflow(mutate=f"await ctx.gmail.send({{ to: 'a', subject: 's', body: {value} }});")
    if place == "returned":
        return workflow(prepare=f"return {{ reservations: [], data: {{ v: {value} }} }};")
    if place == "module":
        return workflow(before=f"const shared = {value};")
    return workflow(
        mutate=f"const body = {value};\nconst same = body;\nawait ctx.gmail.send({{ to: 'a', subject: 's', body: same }});"
    )


CTX_FORMS = [
    "{ NAME() { CALL; return 1; } }",
    "{ NAME: () => CALL }",
    "{ NAME: function () { return CALL; } }",
    "{ 'NAME': (x) => CALL }",
    "{ ['NAME']() { return CALL; } }",
]
CTX_PLACES = ["argument", "returned", "alias"]


@given(st.sampled_from(HOOKS), st.sampled_from(FORMS), st.sampled_from(PLACES))
def test_a_hook_written_in_place_without_ctx_is_accepted_wherever_it_is_defined(
    hook: str, form: str, place: str
) -> None:
    report = validate(_script(hook, form, place))
    assert [d for d in report.diagnostics if d.rule == RULE] == []


@given(
    st.sampled_from(HOOKS),
    st.sampled_from(CTX_FORMS),
    st.sampled_from(CTX_PLACES),
    st.sampled_from(["ctx.gmail.search({})", "ctx.sheets.listRows({ spreadsheetId: 'x' })"]),
)
def test_a_hook_making_a_ctx_call_is_refused_once_wherever_it_is_defined(
    hook: str, form: str, place: str, call: str
) -> None:
    report = validate(_script(hook, form.replace("CALL", call), place))
    assert not report.ok
    assert [d.rule for d in report.diagnostics if d.rule == RULE] == [RULE]


ADVERSARIAL = Path(__file__).parents[2] / "sandbox" / "adversarial"
REFUSED_SCRIPTS = [
    "pollute_array_push.js",
    "pollute_function_call.js",
    "pollute_object_then.js",
    "pollute_object_toJSON.js",
    "proxy_changing_argument.js",
    "replace_json.js",
    "throw_proxy.js",
]
CONTAINED_SCRIPTS = [
    "hostile_getter_argument.js",
    "hostile_toJSON_argument_loop.js",
    "hostile_toJSON_argument_throw.js",
    "loop_in_result_getter.js",
    "loop_in_thenable_result.js",
    "recursion_in_toJSON.js",
    "symbol_toprimitive_result.js",
    "throw_hostile_stack.js",
]


@pytest.mark.parametrize("name", REFUSED_SCRIPTS)
def test_adversarial_scripts_the_runtime_cannot_check_are_refused(name: str) -> None:
    report = validate((ADVERSARIAL / name).read_text(encoding="utf-8"), filename=name)
    assert RULE in {d.rule for d in report.diagnostics}


@pytest.mark.parametrize("name", CONTAINED_SCRIPTS)
def test_adversarial_hooks_without_ctx_calls_are_left_to_the_sandbox_limits(name: str) -> None:
    text = (ADVERSARIAL / name).read_text(encoding="utf-8")
    assert RULE not in {d.rule for d in validate(text, filename=name).diagnostics}
    assert "// expect:" in text
    assert not text.split("// expect:", 1)[1].lstrip().startswith("mutation")
