"""The examples of the docs' observability page (docs/examples/, included into
docs/howto/observability.md), each run as the page says to use it: the
LOGGING dict given to ``logging.config.dictConfig`` ships a real run's lines
as JSON naming the Task; the tracer provider set-up makes a provider that
exports what is traced, under the service's name."""

from __future__ import annotations

import io
import json
import logging
import logging.config
import runpy
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.docs.test_readme_blocks import ROOT
from toolnexus_django.observability.logs import TaskFilter, about_task
from toolnexus_django.testing import ScriptedModel, run_task, say

EXAMPLES = ROOT / "docs" / "examples"


@contextmanager
def loggers_restored() -> Iterator[None]:
    """Every logger's level, handlers, filters, propagation and disabling as
    they were, after the block (dictConfig changes them for the process)."""
    loggers = [logging.root, *logging.root.manager.loggerDict.values()]
    kept = [
        (lg, lg.level, list(lg.handlers), list(lg.filters), lg.propagate, lg.disabled)
        for lg in loggers
        if isinstance(lg, logging.Logger)
    ]
    try:
        yield
    finally:
        for logger, level, handlers, filters, propagate, disabled in kept:
            logger.setLevel(level)
            logger.handlers[:], logger.filters[:] = handlers, filters
            logger.propagate, logger.disabled = propagate, disabled


@pytest.mark.django_db(transaction=True)  # a real run: run_task refuses a test transaction
def test_the_logging_example_ships_a_runs_lines_as_json_naming_its_task() -> None:
    config = runpy.run_path(str(EXAMPLES / "logging_json.py"))["LOGGING"]
    out = io.StringIO()
    with loggers_restored():
        logging.config.dictConfig(config)
        [console] = logging.getLogger("toolnexus_django").handlers
        console.setStream(out)  # the StreamHandler's stderr, kept here to be read
        with ScriptedModel(say("Done.")):
            done = run_task("hello")
        console.close()

    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    # The run's moves (the send before it is no run: its line names no Task).
    moves = [
        line
        for line in lines
        if line["logger"] == "toolnexus_django.lifecycle" and "(submit)" not in line["message"]
    ]
    assert [line["message"].rsplit(" ", 1)[-1] for line in moves] == ["(claim)", "(complete)"]
    assert {line["task_id"] for line in moves} == {done.task_id}
    assert moves[-1]["level"] == "INFO" and moves[-1]["time"].endswith("+00:00")

    # The "text" formatter: the same ids, in a console's line.
    record = logging.LogRecord("toolnexus_django.x", logging.INFO, __file__, 1, "moved", (), None)
    with about_task("t-1"):
        TaskFilter().filter(record)
    text = logging.Formatter(config["formatters"]["text"]["format"]).format(record)
    assert text.endswith("INFO toolnexus_django.x [t-1 ] moved")


class StandInOTLPExporter(InMemorySpanExporter):
    """Where opentelemetry-exporter-otlp's exporter (not a dependency here)
    would ship spans: the SDK's in-memory exporter, with the endpoint."""

    def __init__(self, endpoint: str) -> None:
        super().__init__()
        self.endpoint = endpoint


def test_the_tracer_provider_example_exports_spans_under_the_services_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exporters: list[StandInOTLPExporter] = []

    def otlp_span_exporter(endpoint: str) -> StandInOTLPExporter:
        exporters.append(StandInOTLPExporter(endpoint))
        return exporters[-1]

    otlp = types.ModuleType("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    otlp.OTLPSpanExporter = otlp_span_exporter  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, otlp.__name__, otlp)
    made: list[TracerProvider] = []
    # The global provider is set once per process (the trace tests' is): keep this one aside.
    monkeypatch.setattr(trace, "set_tracer_provider", made.append)

    runpy.run_path(str(EXAMPLES / "tracer_provider.py"))
    [provider], [exporter] = made, exporters
    with provider.get_tracer("toolnexus_django").start_as_current_span("invoke_agent x"):
        pass
    assert provider.force_flush()  # the batch processor hands its spans on
    provider.shutdown()
    [span] = exporter.get_finished_spans()
    assert span.name == "invoke_agent x"
    assert span.resource.attributes["service.name"] == "filing-desk"
    assert exporter.endpoint == "http://otel-collector:4318/v1/traces"
