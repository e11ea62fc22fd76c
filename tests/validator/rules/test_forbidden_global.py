import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "forbidden-global"

INVALID = [
    Case("eval", workflow(next_="eval('1'); // here")),
    Case("function-constructor", workflow(next_="const f = new Function('return 1'); // here")),
    Case(
        "constructor-chain", workflow(next_="const F = (() => {}).constructor.constructor; // here")
    ),
    Case("require-at-top", workflow(before="const fs = require('fs'); // here")),
    Case("static-import", workflow(before="import { x } from './x.js'; // here")),
    Case(
        "dynamic-import",
        workflow(prepare="await import('./x.js'); // here\nreturn { reservations: [], data: {} };"),
    ),
    Case("proto", workflow(next_="const o = {};\no.__proto__ = null; // here")),
    Case("set-prototype", workflow(next_="Object.setPrototypeOf({}, null); // here")),
    Case(
        "fetch",
        workflow(
            prepare="await fetch('https://x'); // here\nreturn { reservations: [], data: {} };"
        ),
    ),
    Case(
        "set-timeout-in-helper",
        workflow(before="function later(f) {\n  setTimeout(f, 10); // here\n}"),
    ),
    Case("global-this-eval", workflow(next_="globalThis.eval('1'); // here")),
    Case("global-this-eval-subscript", workflow(next_="globalThis['eval']('1'); // here")),
    Case(
        "async-function-constructor",
        workflow(
            next_="const AF = Object.getPrototypeOf(async function () {}).constructor; // here"
        ),
    ),
    Case(
        "generator-constructor", workflow(next_="const G = (function* () {}).constructor; // here")
    ),
    Case("url", workflow(next_="const u = new URL(prepared.link); // here")),
    Case("text-encoder", workflow(next_="const bytes = new TextEncoder().encode('x'); // here")),
    Case("intl", workflow(next_="const f = new Intl.NumberFormat('en'); // here")),
    Case("structured-clone", workflow(next_="const copy = structuredClone(prepared); // here")),
    Case("crypto", workflow(next_="const id = crypto.randomUUID(); // here")),
    Case("abort-controller", workflow(next_="const c = new AbortController(); // here")),
    Case("navigator-at-top", workflow(before="const lang = navigator.language; // here")),
    Case("shared-array-buffer", workflow(next_="const b = new SharedArrayBuffer(8); // here")),
    Case("any-missing-global", workflow(next_="const w = WebAssembly.Module; // here")),
    Case("unknown-free-name", workflow(next_="const total = totalCount + 1; // here")),
    Case("arrow-body-eval", workflow(next_="const run = (x) => x;\nconst ev = x => eval; // here")),
    Case(
        "undeclared-inside-a-plain-data-literal",
        workflow(
            prepare="return { reservations: [], data: { id: evnt.id, tags: [lable] } }; // here"
        ),
    ),
]

VALID = [
    Case(
        "typeof-inside-a-plain-data-literal",
        workflow(next_="console.log([typeof WeakRef, { ok: typeof structuredClone }]);"),
    ),
    Case("plain", workflow(next_="const x = JSON.parse('{}');\nreturn x;")),
    Case("shadowed-name", workflow(next_="const fetch = (x) => x;\nreturn fetch(1);")),
    Case(
        "in-strings-and-comments",
        workflow(next_="// eval('x'); require('y')\nconst s = 'fetch(url) and eval()';"),
    ),
    Case(
        "property-names",
        workflow(next_="const o = { eval: 1, require: 2 };\nreturn o.eval + o.require;"),
    ),
    Case(
        "constructor-once",
        workflow(next_="class A {}\nconst B = new A().constructor;\nreturn B.name;"),
    ),
    Case("typeof-guard", workflow(next_="if (typeof URL !== 'undefined') { return 1; }")),
    Case("sandbox-globals", workflow(next_="return { a: btoa('x'), b: performance.now() > 0 };")),
    Case("local-url", workflow(next_="const URL = 'x';\nreturn { URL };")),
    Case("constructor-of-object", workflow(next_="return { t: prepared.constructor === Object };")),
    Case(
        "await-parenthesized-iife",
        workflow(
            prepare="const v = await (async () => {\n  return 1;\n})();\n"
            "return { reservations: [], data: { v } };"
        ),
    ),
    Case(
        "await-parenthesized-member",
        workflow(
            prepare="const p = Promise.resolve({ a: 1 });\nconst a = await (p).a;\n"
            "const b = await (p)[0];\nreturn { reservations: [], data: { a, b } };"
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
