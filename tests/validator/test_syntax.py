"""Early errors come from compiling the script with QuickJS without running any of it."""

from __future__ import annotations

import time

from keep_sdk import validate
from keep_sdk.validator import analyze


def test_top_level_code_never_runs() -> None:
    source = "for (;;) {}\nexport default Keep.workflow({ topics: {} });\n"
    started = time.monotonic()
    report = validate(source)
    assert time.monotonic() - started < 1.5
    assert "syntax-error" not in report.rules()


def test_engine_errors_point_at_the_culprit() -> None:
    source = "const ok = 1;\nconst r = /a/gg;\n"
    [problem] = analyze(source).syntax
    assert problem.source == "engine"
    assert source.encode()[problem.start_byte : problem.end_byte] == b"/a/gg"


def test_nul_and_surrogates_are_reported_not_crashed() -> None:
    for source in ("const a = '\x00';", "const a = '\ud800';"):
        report = validate(source)
        assert report.rules() == {"syntax-error"}


def test_hashbang_is_accepted() -> None:
    source = "#!/usr/bin/env keep\nconst a = 1;\n"
    assert analyze(source).syntax == []


def test_parser_errors_stop_other_rules() -> None:
    report = validate("eval(1);\nconst = ;\n")
    assert report.rules() == {"syntax-error"}
    assert report.workflow is None
