"""docsgen.fences reads a tutorial's blocks as the tutorial conventions say."""

from __future__ import annotations

import subprocess

import pytest

from docsgen.fences import blocks, commands, shell_script

PAGE = """# T

```js title="a.js"
export default 1;
```

```sh
keep validate a.js
keep validate b.js   # exits 1
# a comment
keep run a.js \\
    --until-idle
```

```python
print("hi")
```

```text
shown only
```

1. A list item:

    ```sh
    echo nested
    ```
"""


def test_blocks_are_classified_in_order() -> None:
    found = blocks(PAGE)
    assert [(b.action, b.lang, b.path) for b in found] == [
        ("file", "js", "a.js"),
        ("sh", "sh", None),
        ("python", "python", None),
        ("show", "text", None),
        ("sh", "sh", None),
    ]
    assert found[0].text == "export default 1;\n"
    assert found[0].line == 3
    assert found[4].text == "echo nested\n"


def test_commands_join_continuations_and_read_expected_exit_codes() -> None:
    sh = blocks(PAGE)[1]
    assert [(c.text, c.exit_code) for c in commands(sh)] == [
        ("keep validate a.js", 0),
        ("keep validate b.js", 1),
        ("keep run a.js --until-idle", 0),
    ]


def _bash(text: str) -> subprocess.CompletedProcess[str]:
    (block,) = blocks(f"```sh\n{text}```\n")
    script = shell_script(block)
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)


def test_a_block_runs_as_one_script_and_checks_each_exit_code() -> None:
    done = _bash('X=$(echo hi)\nfalse   # exits 1\n[ "$X" = hi ]\n')
    assert done.returncode == 0, done.stderr


def test_an_unexpected_exit_code_stops_the_block_and_names_the_command() -> None:
    done = _bash("true   # exits 1\necho never\n")
    assert done.returncode == 1
    assert "expected 1" in done.stderr
    assert "true" in done.stderr
    assert "never" not in done.stdout


def test_a_snippet_line_is_the_named_section_of_the_file_without_its_markers() -> None:
    page = (
        '```python title="x.py"\n--8<-- "docs/tutorials/shelf/keep_shelf/store.py:tables"\n```\n'
        '```python title="y.py"\n--8<-- "docs/tutorials/shelf/keep_shelf/store.py"\n```\n'
    )
    section, whole = blocks(page)
    assert section.text.startswith("KEYS: dict[")
    assert section.text in whole.text
    assert "--8<--" not in section.text + whole.text
    assert len(section.text) < len(whole.text)


def test_a_snippet_naming_a_missing_section_says_which() -> None:
    page = '```python title="x.py"\n--8<-- "docs/tutorials/shelf/keep_shelf/store.py:nope"\n```\n'
    with pytest.raises(ValueError, match="no section 'nope'"):
        blocks(page)
