"""Issue 17, item 9: every ``--json`` output is camelCase and matches its published schema."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from keep_sdk.cli.outputs import OUTPUTS
from tests.cli.terminal import ALL_GRANTS, keep, run_demo

_SNAKE = re.compile(r"[a-z0-9]_[a-z]")


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = set(value)
        for item in value.values():
            found |= _keys(item)
        return found
    if isinstance(value, list):
        return set().union(*(_keys(item) for item in value)) if value else set()
    return set()


def _schema(command: str) -> dict[str, Any]:
    done = keep("schema", "--output", command)
    assert done.code == 0, done.err
    schema: dict[str, Any] = json.loads(done.out)
    return schema


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('json') / 'keep.db'}"
    done = run_demo(url, *ALL_GRANTS)
    assert done.code == 0, done.err
    return url


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("events",),
        ("runs",),
        ("ledger",),
        ("run", "--until-idle", "--isolation", "in-process", *ALL_GRANTS),
    ],
    ids=lambda args: args[0],
)
def test_json_output_is_camel_case_and_valid_against_its_schema(
    store: str, args: tuple[str, ...]
) -> None:
    command = args[0]
    argv = [command, *args[1:]]
    if command == "run":
        from tests.cli.terminal import DEMO

        argv.insert(1, str(DEMO))
    done = keep(*argv, "--store", store, "--json")
    assert done.code == 0, done.err
    document = json.loads(done.out)
    snake = sorted(key for key in _keys(document) if _SNAKE.search(key))
    assert snake == [], snake
    jsonschema.validate(document, _schema(command))


def test_status_json_names_runs_and_next_runs_in_camel_case(store: str) -> None:
    document = json.loads(keep("status", "--store", store, "--json").out)
    [workflow] = document["workflows"]
    assert "nextRuns" in workflow
    assert "next_runs" not in workflow
    assert all("runId" in output for output in workflow["outputs"])


def test_revoke_json_is_camel_case(store: str) -> None:
    done = keep("revoke", "invoices", "slack.write", "--store", store, "--json")
    assert done.code == 0, done.err
    document = json.loads(done.out)
    assert {"createdAt", "updatedAt"} <= set(document)
    assert "slack.write" not in document["grants"]
    jsonschema.validate(document, _schema("revoke"))


def test_every_command_with_json_output_has_a_schema() -> None:
    done = keep("schema", "--help")
    assert done.code == 0
    for command in OUTPUTS:
        schema = _schema(command)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["title"]


def test_schema_refuses_a_command_without_json_output() -> None:
    done = keep("schema", "--output", "worker")
    assert done.code == 2
    assert "worker" in done.err


def test_schema_refuses_a_name_and_an_output_together(tmp_path: Path) -> None:
    done = keep("schema", "Event", "--output", "status")
    assert done.code == 2
    assert "not both" in done.err


_TIME = re.compile(r"\d{2}:\d{2}(?::\d{2})?")
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC")


def test_times_in_text_output_carry_their_date_and_zone(store: str) -> None:
    done = keep("status", "--store", store)
    assert done.code == 0, done.err
    assert _STAMP.search(done.out), done.out
    bare = _TIME.findall(_STAMP.sub("", done.out))
    assert bare == [], done.out
