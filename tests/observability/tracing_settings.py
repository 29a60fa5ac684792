"""Settings for a subprocess of the trace tests: testproject's, TRACING on,
and an SDK tracer provider that writes every span to ``$TRACE_SPANS_FILE``
(one JSON object per line), as a project's own exporter would ship them."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from testproject.settings import *  # noqa: F403
from testproject.settings import TOOLNEXUS

TOOLNEXUS = {**TOOLNEXUS, "TRACING": True}


class FileSpanExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(json.loads(s.to_json())) + "\n" for s in spans)
        with self.lock, open(self.path, "a") as out:
            out.write(lines)
        return SpanExportResult.SUCCESS


_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(os.environ["TRACE_SPANS_FILE"])))
trace.set_tracer_provider(_provider)
