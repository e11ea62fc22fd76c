"""Ordinary scripts are not broken by the hardening."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import JsonValue

from keep_sdk.sandbox import Completed, MutationRequested
from tests.sandbox.helpers import FAST_LIMITS, FAST_POLICY, RecordingHost, producer, run

SCRIPTS: dict[str, tuple[str, JsonValue]] = {
    "classes": (
        "class Shape { constructor(n) { this.n = n; } area() { return 0; }"
        " toString() { return 'Shape ' + this.n; } }\n"
        "class Square extends Shape { constructor(s) { super('sq'); this.s = s; }"
        " area() { return this.s ** 2; } }\n"
        "const q = new Square(3);\n"
        "return [q.area(), String(q), q instanceof Shape, Square.name];",
        [9, "Shape sq", True, "Square"],
    ),
    "private fields and static": (
        "class C { #x = 1; static count = 0; inc() { C.count++; return ++this.#x; } }\n"
        "const c = new C(); c.inc();\nreturn [c.inc(), C.count];",
        [3, 2],
    ),
    "destructuring and spread": (
        "const {a, b: [x, ...rest], ...others} = {a: 1, b: [2, 3, 4], c: 5, d: 6};\n"
        "return {a, x, rest, others, merged: {...others, e: 7}};",
        {
            "a": 1,
            "x": 2,
            "rest": [3, 4],
            "others": {"c": 5, "d": 6},
            "merged": {"c": 5, "d": 6, "e": 7},
        },
    ),
    "Map and Set": (
        "const m = new Map([['a', 1]]); m.set('b', 2);\n"
        "const s = new Set([1, 2, 2, 3]);\n"
        "return [[...m.entries()], [...s], m.size, s.has(3), Object.fromEntries(m)];",
        [[["a", 1], ["b", 2]], [1, 2, 3], 2, True, {"a": 1, "b": 2}],
    ),
    "sorting": (
        "const people = [{n: 'b', a: 30}, {n: 'a', a: 30}, {n: 'c', a: 20}];\n"
        "people.sort((x, y) => x.a - y.a || x.n.localeCompare(y.n));\n"
        "return [people.map((p) => p.n), [10, 9, 1].sort(), [3, 1, 2].toSorted()];",
        [["c", "a", "b"], [1, 10, 9], [1, 2, 3]],
    ),
    "dates": (
        "const d = new Date(Date.UTC(2026, 10, 22, 8, 0, 0));\n"
        "const later = new Date(d.getTime() + 86400000);\n"
        "return [d.toISOString(), later.getUTCDate(), JSON.stringify({d}),"
        " Date.parse('2026-01-01T00:00:00Z'), typeof Date.now()];",
        [
            "2026-11-22T08:00:00.000Z",
            23,
            '{"d":"2026-11-22T08:00:00.000Z"}',
            1767225600000,
            "number",
        ],
    ),
    "JSON": (
        "const text = JSON.stringify({a: [1, {b: null}], c: 'é'}, null, 1);\n"
        "const back = JSON.parse(text, (k, v) => (k === 'b' ? 'revived' : v));\n"
        "return [text.split('\\n').length, back];",
        [9, {"a": [1, {"b": "revived"}], "c": "é"}],
    ),
    "regular expressions": (
        "const m = 'Invoice #123 from alice@example.com'.match(/#(\\d+) from (?<who>\\S+)/);\n"
        "return [m[1], m.groups.who, 'a-b_c'.replace(/[-_]/g, ' '),"
        " [...'x1y22'.matchAll(/\\d+/g)].map((r) => r[0])];",
        ["123", "alice@example.com", "a b c", ["1", "22"]],
    ),
    "long concatenated strings": (
        "let s = '';\nfor (let i = 0; i < 20000; i++) s += 'ab';\n"
        "const t = s + s.slice(0, 100);\nreturn [t.length, t.slice(-4), s];",
        [40100, "abab", "ab" * 20000],
    ),
    "Error subclasses": (
        "class NotFound extends Error { constructor(id) { super('missing ' + id);"
        " this.name = 'NotFound'; this.id = id; } }\n"
        "try { throw new NotFound(7); } catch (e) {\n"
        "  return [e.name, e.message, e.id, e instanceof NotFound, e instanceof Error,"
        " String(e)]; }",
        ["NotFound", "missing 7", 7, True, True, "NotFound: missing 7"],
    ),
    "overriding toString on own objects": (
        "const o = {}; o.toString = () => 'mine';\n"
        "function F() {} F.prototype.toString = function () { return 'F!'; };\n"
        "return [String(o), String(new F()), Object.assign({}, {valueOf: 1}).valueOf];",
        ["mine", "F!", 1],
    ),
    "generators, iterators and async iteration": (
        "function* g() { yield 1; yield 2; }\n"
        "async function* ag() { yield 3; yield 4; }\n"
        "const out = [...g()];\nfor await (const v of ag()) out.push(v);\nreturn out;",
        [1, 2, 3, 4],
    ),
    "closures, optional chaining, nullish and labels": (
        "const counter = (() => { let n = 0; return () => ++n; })(); counter();\n"
        "const o = {a: {b: null}};\n"
        "outer: for (const i of [1, 2]) {\n"
        "  for (const j of [1, 2]) { if (j === 2) continue outer; }\n}\n"
        "return [counter(), o.a?.b ?? 'default', o.x?.y, 2 ** 10];",
        [2, "default", None, 1024],
    ),
    "typed arrays and bigint arithmetic": (
        "const a = new Uint8Array([1, 2, 255]);\n"
        "return [Array.from(a), (2n ** 64n).toString(), Number.MAX_SAFE_INTEGER];",
        [[1, 2, 255], "18446744073709551616", 9007199254740991],
    ),
    "Promise combinators and queueMicrotask": (
        "const order = [];\nqueueMicrotask(() => order.push('micro'));\n"
        "const r = await Promise.allSettled(\n"
        "  [Promise.resolve(1), Promise.reject(new Error('x'))]);\n"
        "const any = await Promise.any([Promise.reject(1), Promise.resolve(2)]);\n"
        "return [r.map((x) => x.status), any, order];",
        [["fulfilled", "rejected"], 2, ["micro"]],
    ),
    "globalThis writes stay local": (
        "globalThis.cache = {hits: 1}; cache.hits++;\nreturn cache.hits;",
        2,
    ),
}


ROOMY = FAST_POLICY.model_copy(
    update={
        "sandbox": FAST_LIMITS.model_copy(
            update={"max_state_bytes": 1024 * 1024, "max_value_bytes": 1024 * 1024}
        )
    }
)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_legitimate_script(name: str) -> None:
    body, expected = SCRIPTS[name]
    assert run(producer(body), policy=ROOMY).outcome == Completed(result=expected)


def test_the_spec_example_runs_through_all_phases() -> None:
    source = (Path(__file__).parent / "workflows" / "email_to_sheets.js").read_text("utf-8")
    email = {"messageId": "m1", "payload": {"from": "alice@example.com", "subject": "Hi"}}
    host = RecordingHost(lambda name, args: [email] if name == "peek" else {"ok": True})
    prepared = run(source, "prepare", handler="processEmail", host=host).outcome
    assert isinstance(prepared, Completed)
    assert isinstance(prepared.result, dict)
    assert prepared.result["reservations"] == [{"topic": "email.received", "ids": ["m1"]}]
    mutated = run(source, "mutate", handler="processEmail", prepared=prepared.result).outcome
    assert mutated == MutationRequested(
        connector="sheets",
        operation="appendRow",
        arguments={"values": ["alice@example.com", "Hi"]},
        line=16,
        column=73,
    )
    done = run(
        source,
        "next",
        handler="processEmail",
        host=host,
        prepared=prepared.result,
        mutation_result={"status": "applied", "result": {"rowId": 7}},
    )
    assert done.outcome == Completed(result={"processed": 1})
    assert host.calls[-1][0] == "publish"
