"""Settings for ``toolnexus sqlite traced`` in benchmarks/versus_sdk.py: the
testproject's, with ``TRACING`` on and an OpenTelemetry SDK tracer provider
whose ``BatchSpanProcessor`` hands every span to an exporter that drops it.

What is measured is the cost of tracing in the server — the app's
instrumentation and the SDK's spans, their batching thread — not that of an
exporter, which is the project's choice (OTLP over HTTP or gRPC to a
collector) and costs what it costs alongside any server.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

from testproject.settings import *  # noqa: F403
from testproject.settings import TOOLNEXUS

TOOLNEXUS = {**TOOLNEXUS, "TRACING": True}


class Dropped(SpanExporter):
    """Takes every batch, keeps nothing."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


#: The share of traces recorded (``TOOLNEXUS_TRACE_SAMPLE_RATIO``, default all):
#: a ParentBased(TraceIdRatioBased) sampler, as a busy project would run.
RATIO = float(os.environ.get("TOOLNEXUS_TRACE_SAMPLE_RATIO", "1"))

_provider = TracerProvider(
    resource=Resource.create({"service.name": "toolnexus-bench"}),
    sampler=ParentBased(TraceIdRatioBased(RATIO)),
)
_provider.add_span_processor(BatchSpanProcessor(Dropped()))
trace.set_tracer_provider(_provider)
