"""keep_sdk.workflow: what the runtime loads is what the validator read."""

from __future__ import annotations

from pathlib import Path

import pytest
import quickjs

from keep_sdk import load_workflow, validate
from keep_sdk.errors import ScriptRejected
from keep_sdk.model import HandlerPhase, HostPolicy
from keep_sdk.validator import CronSchedule, IntervalSchedule

FIXTURES = Path(__file__).parents[2] / "fixtures" / "workflows"


def test_manifest_of_the_spec_example() -> None:
    source = (FIXTURES / "valid" / "spec_06a_email_to_sheets.js").read_text()
    workflow = load_workflow(source, filename="email.js")
    assert workflow.name == "email-to-sheets"
    assert workflow.topics == ["email.received", "row.created"]
    producer = workflow.producers["pollEmail"]
    assert producer.schedule == IntervalSchedule(seconds=300, every="5m")
    consumer = workflow.consumers["processEmail"]
    assert consumer.subscribe == ["email.received"]
    assert consumer.publishes is None
    mutate = workflow.handler("processEmail", HandlerPhase.MUTATE)
    text = source[mutate.span.start_offset : mutate.span.end_offset]
    assert text.startswith("async mutate(ctx, prepared)")
    assert text.endswith("}")


def test_schedules_and_named_handlers() -> None:
    source = (FIXTURES / "valid" / "reads_and_named_handlers.js").read_text()
    workflow = load_workflow(source)
    assert workflow.producers["collect"].schedule == CronSchedule(cron="0 8 * * 1-5")
    location = workflow.handler("post", HandlerPhase.PREPARE)
    assert location.function_name == "prepareDigest"
    assert source[location.span.start_offset :].startswith("async function prepareDigest")


def test_bare_producer_gets_the_policy_default_interval() -> None:
    source = (FIXTURES / "valid" / "spec_06_declaration_shape.js").read_text()
    workflow = load_workflow(source, policy=HostPolicy(default_producer_interval_s=42))
    assert workflow.producers["pollEmail"].schedule == IntervalSchedule(seconds=42)


def test_rejected_script_carries_the_report() -> None:
    source = (FIXTURES / "invalid" / "multiple_mutations.js").read_text()
    with pytest.raises(ScriptRejected) as caught:
        load_workflow(source, filename="many.js")
    assert caught.value.report.errors
    assert "many.js was rejected by the validator with" in str(caught.value)


def test_warnings_do_not_reject() -> None:
    source = (FIXTURES / "invalid" / "event_titles_and_ids.js").read_text()
    workflow = load_workflow(source)
    assert workflow.report.warnings


def test_report_and_workflow_share_one_manifest() -> None:
    source = (FIXTURES / "valid" / "branches_and_switch.js").read_text()
    assert load_workflow(source).manifest == validate(source).workflow


@pytest.mark.parametrize("path", sorted((FIXTURES / "valid").glob("*.js")), ids=lambda p: p.stem)
def test_function_body_compiles_and_returns_the_declaration(path: Path) -> None:
    workflow = load_workflow(path.read_text())
    body = workflow.function_body()
    assert len(body.split("\n")) == len(workflow.source.split("\n"))
    context = quickjs.Context()
    context.set_time_limit(2)
    result = context.eval(
        f"(function () {{ const Keep = {{ workflow: (d) => d, consumer: (c) => c }};\n{body}\n}})()"
    )
    names = context.eval("(d) => JSON.stringify(Object.keys(d.consumers || {}))")
    consumers = [c.name for c in workflow.manifest.consumers]
    assert names(result) == str(consumers).replace("'", '"').replace(", ", ",")


def test_function_body_keeps_positions() -> None:
    source = (FIXTURES / "valid" / "aliases_and_helpers.js").read_text()
    workflow = load_workflow(source)
    body = workflow.function_body()
    value = workflow.manifest.default_export.value
    assert (
        body[value.start_offset : value.end_offset] == source[value.start_offset : value.end_offset]
    )
    assert body[workflow.manifest.default_export.statement.start_offset :].startswith("return (")
