"""The SERVER span of one MCP request (TRACING), after OpenTelemetry's MCP
conventions: named ``{mcp.method.name} {target}`` (``tools/call snooze``),
its parent an incoming ``traceparent``. The request is answered on the
runtime's loop: the span ends when its reply is ready."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from . import spannames as names
from . import tracing

MCP_METHOD = "mcp.method.name"
Reply = TypeVar("Reply")


def traced_mcp(
    headers: list[tuple[bytes, bytes]], body: bytes, owner: str, start: Callable[[], Future[Reply]]
) -> Future[Reply]:
    """``start()`` (which answers the request) inside its span."""
    from opentelemetry import propagate, trace

    method, tool = _method_of(body)
    attributes = {
        MCP_METHOD: method,
        names.BINDING: "mcp",
        names.USER_ID: owner or "anonymous",
        names.TOOL_NAME: tool,
        names.OPERATION: "execute_tool" if method == "tools/call" else None,
    }
    carrier = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}
    current = tracing.tracer().start_span(
        f"{method} {tool}" if tool else method,
        context=propagate.extract(carrier),
        kind=trace.SpanKind.SERVER,
        attributes={k: v for k, v in attributes.items() if v is not None},
    )
    try:
        future = start()
    except BaseException as exc:
        tracing.mark_failed(current, type(exc).__qualname__)
        current.end()
        raise

    def ended(done: Future[Reply]) -> None:
        if done.cancelled() or done.exception() is not None:
            tracing.mark_failed(current, "cancelled" if done.cancelled() else "internal")
        else:
            status = getattr(done.result(), "status", None)
            tracing.note(current, {"http.response.status_code": status})
            if isinstance(status, int) and status >= 500:
                tracing.mark_failed(current, str(status))
        current.end()

    future.add_done_callback(ended)
    return future


def _method_of(body: bytes) -> tuple[str, str | None]:
    """The JSON-RPC method the body names, and the tool of a ``tools/call``."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return "mcp", None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("method"), str):
        return "mcp", None  # a batch, a response, or no request at all
    params = parsed.get("params")
    tool = params.get("name") if isinstance(params, dict) else None
    method = parsed["method"][:100]
    return method, (tool[:100] if isinstance(tool, str) and method == "tools/call" else None)
