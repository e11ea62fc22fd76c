"""Scripts of one shape at any size, for the linear-time test and `benchmarks/validator.py`.

Each entry of `SHAPES` maps a name to a generator of a whole workflow holding ``n``
repetitions of one construct (chains, nesting, many declarations...) and the ``n`` both
start from; a validator with a path quadratic in one construct shows it on that shape.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["HAZARDS", "SHAPES", "workflow"]


def workflow(body: str, before: str = "") -> str:
    """A valid workflow whose consumer's prepare runs `body`, with `before` at module level."""
    return (
        f"{before}\nexport default Keep.workflow({{ name: 'w', topics: {{ t: {{}} }},\n"
        "  consumers: { c: { subscribe: ['t'],\n"
        f"    async prepare(ctx, state) {{\n{body}\n"
        "      return { reservations: [], data: {} };\n    },\n"
        "    async mutate(ctx, prepared) {},\n    async next(ctx, prepared) {} } } });\n"
    )


def _handlers(n: int) -> str:
    producers = ",\n".join(
        f"  p{i}: async (ctx, state) => {{ const x = (state ?? 0) + {i}; return x; }}"
        for i in range(n)
    )
    return (
        "export default Keep.workflow({ name: 'w', topics: {}, producers: {\n"
        f"{producers}\n}} }});\n"
    )


SHAPES: dict[str, tuple[Callable[[int], str], int]] = {
    "nullish chain, free name": (lambda n: workflow("const v = " + " ?? ".join(["a"] * n)), 250),
    "sum chain, declared": (
        lambda n: workflow("const a = 1;\nconst v = " + " + ".join(["a"] * n) + ";"),
        250,
    ),
    "a?.b( nested": (lambda n: workflow("const v = " + "a?.b(" * n + ")" * n), 64),
    "f( nested": (
        lambda n: workflow("const f = (x) => x;\nconst v = " + "f(" * n + "1" + ")" * n),
        64,
    ),
    "member chain": (lambda n: workflow("const a = {};\nconst v = a" + ".b" * n + ";"), 250),
    "optional member chain": (
        lambda n: workflow("const a = {};\nconst v = a" + "?.b" * n + ";"),
        250,
    ),
    "call chain": (lambda n: workflow("const a = {};\nconst v = a" + ".b()" * n + ";"), 250),
    "arrays nested": (lambda n: workflow("const v = " + "[" * n + "1" + "]" * n + ";"), 64),
    "objects nested": (lambda n: workflow("const v = " + "{a: " * n + "1" + "}" * n + ";"), 64),
    "arrows nested": (lambda n: workflow("const v = " + "() => " * n + "1;"), 64),
    "object, many keys": (
        lambda n: workflow("const v = {" + ", ".join(f"k{i}: {i}" for i in range(n)) + "};"),
        250,
    ),
    "ternary chain": (lambda n: workflow("const a = 1;\nconst v = " + "a ? a : " * n + "a;"), 250),
    "many declarations": (
        lambda n: workflow("".join(f"const v{i} = {i};\n" for i in range(n))),
        125,
    ),
    "many statements": (lambda n: workflow("let x = 0;\n" + "x = x + 1;\n" * n), 250),
    "many templates": (
        lambda n: workflow("".join(f"const t{i} = `${{state}}-{i}`;\n" for i in range(n))),
        125,
    ),
    "module constants": (
        lambda n: workflow(
            "const v = [" + ", ".join(f"C{i}" for i in range(n)) + "];",
            "".join(f"const C{i} = `c${{{i}}}`;\n" for i in range(n)),
        ),
        125,
    ),
    "helpers": (
        lambda n: workflow(
            "let v = 0;\n" + "".join(f"v = h{i}(v);\n" for i in range(n)),
            "".join(f"function h{i}(x) {{ return x + {i}; }}\n" for i in range(n)),
        ),
        125,
    ),
    "many handlers": (_handlers, 40),
    "non-ASCII strings": (
        lambda n: workflow("".join(f"const s{i} = 'é☃\U0001f600{i}';\n" for i in range(n))),
        125,
    ),
}


HAZARDS = (
    "\udcc8",
    "\ud83d",
    "\x00",
    "`",
    "\\",
    "`\\",
    "${",
    "\\u{",
    "\\x",
    "\r",
    "\u2028",
    "\U0001f600",
    "e\u0301",
    "/*",
    "'",
    '"',
    "//",
    "\n",
    "(" * 300,
    " ?? a" * 300,
    "?.b(" * 200,
)
"""Pieces that have broken a parser or a position mapping (lone surrogates, NUL, template
escapes, line separators, combining marks) or a linear-time bound (deep nesting, long
chains), for inserting into valid scripts."""
