import pytest

from tests.validator.cases import Case, assert_reports, assert_silent, workflow

RULE = "shared-state"

INVALID = [
    Case("let-increment", workflow(before="let runs = 0;", next_="runs++; // here")),
    Case(
        "var-assign",
        workflow(before="var last = null;", producer="last = state; // here\nreturn state;"),
    ),
    Case(
        "set-add",
        workflow(
            before="const seen = new Set();",
            prepare="seen.add('x'); // here\nreturn { reservations: [], data: {} };",
        ),
    ),
    Case(
        "object-member",
        workflow(before="const cache = {};", next_="cache[prepared.data.id] = true; // here"),
    ),
    Case(
        "array-push-in-helper",
        workflow(
            before="const log = [];\nfunction remember(x) {\n  log.push(x); // here\n}",
            next_="remember(1);",
        ),
    ),
    Case("globalThis", workflow(next_="globalThis.lastRun = 1; // here")),
    Case(
        "implicit-global",
        workflow(prepare="total = 5; // here\nreturn { reservations: [], data: {} };"),
    ),
    Case(
        "read-of-written",
        workflow(
            before="let count = 0;",
            prepare="return { reservations: [], data: { count } }; // here",
            next_="count = 1; // here",
        ),
    ),
    Case(
        "class-static-field",
        workflow(before="class Stats { static n = 0; }", next_="Stats.n = 1; // here"),
    ),
    Case(
        "class-static-array-push",
        workflow(
            before="class Audit { static log = []; }", next_="Audit.log.push(prepared); // here"
        ),
    ),
    Case(
        "function-property",
        workflow(
            before="function track() {}", next_="track.calls = (track.calls || 0) + 1; // here"
        ),
    ),
    Case(
        "alias-of-module-array",
        workflow(
            before="const LOG = [];", next_="const entries = LOG; // here\nentries.push(1); // here"
        ),
    ),
    Case(
        "destructured-element",
        workflow(
            before="const QUEUE = [{ n: 0 }];",
            next_="const [head] = QUEUE; // here\nhead.n = 2; // here",
        ),
    ),
    Case(
        "helper-parameter-bound-to-module-object",
        workflow(
            before="const SEEN = new Set();\nfunction mark(set, id) {\n  set.add(id); // here\n}",
            next_="mark(SEEN, prepared.id); // here",
        ),
    ),
    Case(
        "found-element",
        workflow(
            before="const USERS = [{ id: 1, visits: 0 }];",
            next_="const user = USERS.find((u) => u.id === 1); // here\nuser.visits += 1; // here",
        ),
    ),
    Case(
        "indexed-element",
        workflow(before="const ROWS = [{ seen: false }];", next_="ROWS[0].seen = true; // here"),
    ),
    Case(
        "object-assign-on-alias",
        workflow(
            before="const SETTINGS = { mode: 'a' };",
            next_="const s = SETTINGS; // here\nObject.assign(s, { mode: 'b' }); // here",
        ),
    ),
    Case(
        "static-method-writes-this",
        workflow(
            before="class Counter {\n  static bump() {\n    this.n = (this.n || 0) + 1; // here\n  }\n}",
            next_="Counter.bump();",
        ),
    ),
    Case(
        "class-instance-method-writes-this",
        workflow(
            before="class Counter {\n  constructor() { this.n = 0; }\n"
            "  inc() { this.n++; return this.n; } // here\n}\nconst counter = new Counter();",
            next_="counter.inc(); // here",
        ),
    ),
    Case(
        "class-instance-method-pushes",
        workflow(
            before="class Log {\n  items = [];\n  add(x) { this.items.push(x); } // here\n}\n"
            "const log = new Log();",
            next_="log.add(prepared.data); // here",
        ),
    ),
    Case(
        "iife-closure-counter",
        workflow(
            before="const next = (() => {\n  let n = 0;\n  return () => ++n; // here\n})();",
            next_="const k = next();",
        ),
    ),
    Case(
        "iife-closure-object",
        workflow(
            before="const ids = (function () {\n  const seen = new Set();\n"
            "  return { remember(id) { seen.add(id); } }; // here\n})();",
            next_="ids.remember(prepared.data.id);",
        ),
    ),
]

VALID = [
    Case(
        "const-config",
        workflow(
            before="const CONFIG = { sheet: 's' };\nconst NAME = 'x';",
            mutate="await ctx.sheets.appendRow({ spreadsheetId: CONFIG.sheet, values: [NAME] });",
        ),
    ),
    Case("local-let", workflow(next_="let n = 0;\nn++;\nreturn { n };")),
    Case(
        "helper-function",
        workflow(
            before="function double(x) {\n  return x * 2;\n}", next_="return { n: double(2) };"
        ),
    ),
    Case(
        "never-written-let",
        workflow(
            before="let LIMIT = 10;", prepare="return { reservations: [], data: { limit: LIMIT } };"
        ),
    ),
    Case(
        "state-argument",
        workflow(producer="const next = { ...state, runs: (state?.runs ?? 0) + 1 };\nreturn next;"),
    ),
    Case(
        "shadowed-local",
        workflow(
            before="let count = 0;\nfunction bump() {\n  count++;\n}",
            next_="let count = 5;\ncount++;\nreturn { count };",
        ),
    ),
    Case(
        "copy-of-module-array",
        workflow(
            before="const DEFAULTS = [1, 2];",
            next_="const mine = [...DEFAULTS];\nmine.push(3);\nreturn { mine };",
        ),
    ),
    Case(
        "mapped-copy",
        workflow(
            before="const ITEMS = [{ n: 1 }];",
            next_="const copy = ITEMS.map((i) => ({ ...i }));\ncopy[0].n = 2;\nreturn { copy };",
        ),
    ),
    Case(
        "class-used-as-namespace",
        workflow(
            before="class Fmt { static money(n) { return `$${n}`; } }",
            next_="return { text: Fmt.money(prepared.total) };",
        ),
    ),
    Case(
        "class-instance-pure-methods",
        workflow(
            before="class Fmt {\n  money(x) { return x.toFixed(2); }\n}\nconst fmt = new Fmt();",
            next_="const v = fmt.money(3);",
        ),
    ),
    Case(
        "iife-of-constants",
        workflow(
            before="const LIMITS = (() => {\n  const max = 3;\n"
            "  return { max, twice: (x) => x * 2 };\n})();",
            next_="const v = LIMITS.twice(LIMITS.max);",
        ),
    ),
    Case(
        "class-instance-in-handler",
        workflow(
            before="class Counter {\n  n = 0;\n  inc() { this.n++; }\n}",
            next_="const c = new Counter();\nc.inc();",
        ),
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_reports(case: Case) -> None:
    assert_reports(RULE, case)


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.id)
def test_silent(case: Case) -> None:
    assert_silent(RULE, case)
