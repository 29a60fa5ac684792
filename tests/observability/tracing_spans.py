"""The OpenTelemetry SDK's in-memory exporter as the global tracer provider,
for the trace tests: installed once per process (the global provider can be
set only once); and what the tests read of spans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import wait_until

_installed: list[Any] = []


def installed_exporter() -> Any:
    """The in-memory exporter, added to the global SDK provider the first time."""
    if _installed:
        return _installed[0]
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # nobody set one yet in this process
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _installed.append(exporter)
    return exporter


def finished(exporter: Any) -> list[Any]:
    return list(exporter.get_finished_spans())


def named(exporter: Any, prefix: str) -> list[Any]:
    return [s for s in finished(exporter) if s.name.startswith(prefix)]


def wait_for_span(exporter: Any, prefix: str, count: int = 1) -> list[Any]:
    """The finished spans named ``prefix...``, once there are ``count`` (runs
    end in the background, after the Task's state is visible)."""
    return wait_until(
        lambda: (found := named(exporter, prefix)) and len(found) >= count and found,
        timeout=20,
        what=f"{count} span(s) {prefix!r}",
    )


def hex_trace(span: Any) -> str:
    return format(span.context.trace_id, "032x")


def hex_span(span: Any) -> str:
    return format(span.context.span_id, "016x")


def parent_of(span: Any) -> str | None:
    return format(span.parent.span_id, "016x") if span.parent is not None else None


def spans_in_file(path: Path) -> list[dict[str, Any]]:
    """The spans a subprocess wrote (``tracing_settings``): the SDK's JSON, one per line."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
