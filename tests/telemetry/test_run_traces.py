"""One OpenTelemetry trace per run: phase and call spans, the idempotency key, no secret."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from keep_sdk.app import Installation
from keep_sdk.cli import cli
from keep_sdk.cli.support import loaded_plugins
from keep_sdk.connectors.secrets import Redactor, Secret
from keep_sdk.contract.observations import RunChanged
from keep_sdk.model import HandlerKind, PhaseTrace, RunRecord, RunStatus, TraceCall
from keep_sdk.telemetry import RunTracer

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "fixtures" / "workflows" / "demo" / "invoices.js"
SAMPLE = DEMO.with_name("sample-data.json")
SECRET = "tok-9f2c71d0e4b84a55"
GRANTS = ("--grant", "gmail.read", "--grant", "sheets.write", "--grant", "slack.write")


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = RunTracer(provider, redact=Redactor([Secret(SECRET)]))
    plugins = loaded_plugins()
    plugins.register(tracer, name="test-traces")
    try:
        yield exporter
    finally:
        plugins.pm.unregister(tracer)
        tracer.close()


def _texts(span: ReadableSpan) -> list[str]:
    values = [span.name, span.status.description or ""]
    values += [json.dumps(v) for v in (span.attributes or {}).values()]
    return values


def _children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def test_one_consumer_run_is_one_trace(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    data = json.loads(SAMPLE.read_text())
    data["gmail"]["messages"] = [
        {
            "id": "msg-1",
            "from": "billing@example.com",
            "to": "finance@example.com",
            "subject": f"Invoice 1 {SECRET}",
            "body": f"Amount due: 10.00 EUR; token {SECRET}",
            "receivedAt": "2026-11-21T08:12:00Z",
        }
    ]
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps(data))
    store = f"sqlite:///{tmp_path / 'keep.db'}"
    result = CliRunner().invoke(
        cli,
        [
            *("run", str(DEMO), "--store", store, "--seed", str(seed), *GRANTS),
            *("--until-idle", "--isolation", "in-process"),
        ],
    )
    assert result.exit_code == 0, result.output
    finished = spans.get_finished_spans()
    inst = Installation.open(store, isolation="in-process")
    try:
        consumer = next(
            r for r in inst.store.list_runs(workflow="invoices") if r.handler == "addRow"
        )
        entry = inst.store.ledger_entry_for_run(consumer.id)
    finally:
        inst.close()
    assert entry is not None
    roots = [
        s
        for s in finished
        if s.name == "keep.run" and (s.attributes or {}).get("keep.run.id") == consumer.id
    ]
    assert len(roots) == 1
    root = roots[0]
    assert root.parent is None
    assert root.attributes is not None
    assert root.attributes["keep.idempotency_key"] == entry.idempotency_key
    assert root.attributes["keep.run.status"] == "committed"
    assert root.attributes["keep.handler"] == "addRow"
    in_trace = [s for s in finished if s.context.trace_id == root.context.trace_id]
    phases = [
        s for s in in_trace if s.parent is not None and s.parent.span_id == root.context.span_id
    ]
    assert [s.name for s in phases] == [
        "keep.phase prepare",
        "keep.phase mutate",
        "keep.phase next",
    ]
    mutate = phases[1]
    calls = [
        s for s in in_trace if s.parent is not None and s.parent.span_id == mutate.context.span_id
    ]
    assert [s.name for s in calls] == ["keep.call sheets.appendRow"]
    assert calls[0].attributes is not None
    assert calls[0].attributes["keep.idempotency_key"] == entry.idempotency_key
    assert calls[0].attributes["keep.call.status"] == "requested"
    assert [s.name for s in _children(in_trace, phases[0])] == ["keep.call peek"]
    for span in in_trace:
        assert span.start_time is not None
        assert span.end_time is not None
        assert span.start_time <= span.end_time
    for span in finished:
        for text in _texts(span):
            assert SECRET not in text, (span.name, text)


def test_a_failed_call_error_is_redacted() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = RunTracer(provider, redact=Redactor([Secret(SECRET)]))
    now = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)
    run = RunRecord(
        id="run-1",
        workflow="w",
        workflow_version=1,
        handler="h",
        kind=HandlerKind.PRODUCER,
        created_at=now,
        updated_at=now,
    )
    tracer.observe(RunChanged(run=run))
    failed = run.model_copy(
        update={
            "status": RunStatus.FAILED_LOGIC,
            "error": f"401 for token {SECRET}",
            "trace": [
                PhaseTrace(
                    phase="producer",
                    wall_time_s=0.5,
                    calls=[
                        TraceCall(
                            operation="http.get",
                            status="failed",
                            error=f"GET https://api.example/?key={SECRET}: 401",
                            duration_s=0.2,
                        )
                    ],
                )
            ],
        }
    )
    tracer.observe(RunChanged(run=failed, previous=run))
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == ["keep.call http.get", "keep.phase producer", "keep.run"]
    for span in exporter.get_finished_spans():
        for text in _texts(span):
            assert SECRET not in text, (span.name, text)
    errors = [s.status.description for s in exporter.get_finished_spans() if s.status.description]
    assert len(errors) == 2
