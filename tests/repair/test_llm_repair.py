"""keep repair --model: the `llm` adapter with a scripted fake model registered as an `llm`
plugin inside the test suite (no network)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llm
import pytest
from click.testing import CliRunner

from keep_sdk.cli import cli
from keep_sdk.repair.llm_adapter import extract_script

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo"
BROKEN = ROOT / "fixtures" / "workflows" / "repair" / "invoices-broken.js"
FIXED = (DEMO / "invoices.js").read_text()
PARTIAL = FIXED.replace("await ctx.slack.postMessage", "await ctx.slack.postMesage")
WORSE = BROKEN.read_text().replace("ctx.gmail.search", "ctx.gmail.serch")


class ScriptedModel(llm.Model):
    """Answers each prompt with the next scripted answer, as a chat model would."""

    model_id = "keep-scripted"
    can_stream = False

    def __init__(self) -> None:
        self.answers: list[str] = []
        self.prompts: list[str] = []

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        self.prompts.append(prompt.prompt)
        if not self.answers:
            raise AssertionError("the loop asked for more fixes than were scripted")
        yield self.answers.pop(0)


class _Plugin:
    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(self.model)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ScriptedModel]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    scripted = ScriptedModel()
    plugin = _Plugin(scripted)
    llm.plugins.pm.register(plugin, name="keep-scripted")
    try:
        yield scripted
    finally:
        llm.plugins.pm.unregister(plugin)


def keep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _answer(script: str) -> str:
    return f"Here is the fixed script:\n\n```js\n{script}```\n\nI renamed the operation."


def test_the_fake_model_repairs_the_broken_fixture_in_two_rounds(
    model: ScriptedModel, tmp_path: Path
) -> None:
    model.answers = [_answer(PARTIAL), _answer(FIXED)]
    out_file = tmp_path / "fixed.js"
    code, out, err = keep("repair", str(BROKEN), "--model", "keep-scripted", "--cases",
                          str(DEMO / "invoices.keep.yaml"), "--output", str(out_file),
                          "--json")  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert result["ok"] is True
    assert [r["verdict"]["ok"] for r in result["rounds"]] == [False, False, True]
    assert out_file.read_text() == FIXED
    assert len(model.prompts) == 2
    assert "apendRow" in model.prompts[0]
    assert "did you mean `appendRow`?" in model.prompts[0]
    assert "postMesage" in model.prompts[1]
    assert "apendRow" not in model.prompts[1].split("## The script")[0]


def test_a_model_that_makes_things_worse_never_wins(model: ScriptedModel) -> None:
    model.answers = [_answer(WORSE), _answer(WORSE)]
    code, out, _ = keep("repair", str(BROKEN), "--model", "keep-scripted", "--max-rounds", "2")
    assert code == 1
    assert "round 0: 2 problem(s)" in out
    assert "round 1: 3 problem(s)" in out
    assert "no clean verdict" in out


def test_an_unknown_model_is_one_usage_error(model: ScriptedModel) -> None:
    code, _, err = keep("repair", str(BROKEN), "--model", "no-such-model")
    assert code == 2
    assert "llm knows no model 'no-such-model'" in err


def test_the_script_is_taken_from_the_last_fenced_block() -> None:
    answer = "first\n```js\nold\n```\nthen\n```javascript\nnew()\n```\n"
    assert extract_script(answer) == "new()\n"
    assert (
        extract_script("export default Keep.workflow({})") == "export default Keep.workflow({})\n"
    )
