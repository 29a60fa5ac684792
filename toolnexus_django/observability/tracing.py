"""OpenTelemetry traces (``TOOLNEXUS["TRACING"]``, the ``otel`` extra).

Spans go to the global tracer provider: the project installs the SDK and its
exporters the usual way (its own ``TracerProvider``, or
``opentelemetry-instrument``). Off — the default, or on without
``opentelemetry-api`` (check E901) — nothing here imports OpenTelemetry and
every hot path pays one check of :func:`recording`, a module global read once
per settings change.

What is traced (:mod:`.spannames` names the attributes):

* a SERVER span per A2A request, named after the operation (:func:`traced_operation`),
  its parent an incoming W3C ``traceparent``;
* an ``invoke_agent`` span per run (:func:`run_span`), continuing the trace of
  the request that started the Task: that request's context is stored with the
  Task (:func:`carrier`) and read back by whichever process runs it, however
  much later — a resume also links to the decision that answered it;
* ``chat`` and ``execute_tool`` spans from the client's hooks (:mod:`.genai`);
* a span per push delivery and per review decision (:func:`span`).

Message content is never recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ..conf import toolnexus_settings
from . import spannames as names

#: None: not read since the setting last changed.
_on: bool | None = None
_tracer: Any = None


def recording() -> bool:
    """Whether spans are recorded: ``TRACING`` is on and OpenTelemetry imports."""
    on = _on
    return _switched_on() if on is None else on


def _switched_on() -> bool:
    global _on
    on = toolnexus_settings.TRACING is True
    if on:
        try:
            import opentelemetry.trace  # noqa: F401
        except ImportError:  # check E901 says so; serving goes on untraced
            on = False
    _on = on
    return on


def _forget() -> None:
    global _on, _tracer
    _on, _tracer = None, None


toolnexus_settings.on_reload(_forget)


def tracer() -> Any:
    """This app's tracer, from the global provider (a proxy until one is set)."""
    global _tracer
    if _tracer is None:
        from importlib.metadata import PackageNotFoundError, version

        from opentelemetry import trace

        try:
            ours = version("toolnexus-django")
        except PackageNotFoundError:
            ours = None
        _tracer = trace.get_tracer("toolnexus_django", ours)
    return _tracer


# -- trace context kept with a Task -------------------------------------------------------


def carrier() -> dict[str, str] | None:
    """The current span's context as W3C Trace Context headers (``traceparent``,
    ``tracestate``), to store with a Task; None when off or outside a span."""
    if not recording():
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    out: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(out)
    return out or None


def _context_of(stored: Any) -> Any:
    """The OpenTelemetry context a stored :func:`carrier` holds (None: none)."""
    if not isinstance(stored, Mapping) or not stored.get("traceparent"):
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract(
        {k: str(v) for k, v in stored.items() if k in ("traceparent", "tracestate")}
    )


def _span_context_of(stored: Any) -> Any:
    from opentelemetry import trace

    context = _context_of(stored)
    found = trace.get_current_span(context).get_span_context() if context else None
    return found if found is not None and found.is_valid else None


# -- spans ---------------------------------------------------------------------------


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items() if v is not None}


@contextmanager
def span(
    name: str,
    attributes: Mapping[str, Any],
    *,
    kind: str = "INTERNAL",
    parent: Any = None,
    links: Mapping[str, Any] | None = None,
) -> Iterator[Any]:
    """An active span (``parent``: a stored :func:`carrier` to continue,
    else the current span; ``links``: stored carriers by what they were),
    ended when the block is left; an exception leaving it marks it ERROR
    with ``error.type``. Yields None when tracing is off."""
    if not recording():
        yield None
        return
    from opentelemetry import trace

    made_links = []
    for what, stored in (links or {}).items():
        linked = _span_context_of(stored)
        if linked is not None:
            made_links.append(trace.Link(linked, {names.LINK_KIND: what}))
    with tracer().start_as_current_span(
        name,
        context=_context_of(parent),
        kind=getattr(trace.SpanKind, kind),
        attributes=_clean(attributes),
        links=made_links,
        record_exception=False,  # its message may quote what the caller sent
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            mark_failed(current, type(exc).__qualname__)
            raise


def mark_failed(current: Any, error_type: str) -> None:
    """Mark ``current`` failed: status ERROR and ``error.type``."""
    from opentelemetry.trace import Status, StatusCode

    current.set_attribute(names.ERROR_TYPE, error_type)
    current.set_status(Status(StatusCode.ERROR))


def note(current: Any, attributes: Mapping[str, Any]) -> None:
    """Set ``attributes`` (None values skipped) on ``current``, if there is one."""
    if current is not None:
        current.set_attributes(_clean(attributes))


def current_trace_id() -> str | None:
    """The current trace's id (32 hex digits), for log lines; None when off."""
    if not recording():
        return None
    from opentelemetry import trace

    found = trace.get_current_span().get_span_context()
    return format(found.trace_id, "032x") if found.is_valid else None


# -- the request span -----------------------------------------------------------------


def traced_operation(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` (a handler's ``on_*``) inside a SERVER span named after the
    A2A operation ``name``, the caller's ``traceparent`` its parent.

    Lean: a GetTask costs the server about 0.3 ms of CPU and a span of the
    SDK about a tenth of that, so nothing here adds to it what it can skip —
    the propagator reads the headers only when one of its fields is there,
    and the span's attributes are given once, at its start, where the SDK
    checks them in one pass."""
    from opentelemetry import trace

    span_name = names.OPERATIONS.get(name, name)
    server = trace.SpanKind.SERVER

    def traced(params: dict[str, Any], ctx: Any, dialect: Any) -> Any:
        headers = ctx.trace_headers
        attributes = {
            names.DIALECT: dialect.value,
            names.BINDING: ctx.binding,
            names.USER_ID: ctx.owner or "anonymous",
        }
        asked = _asked_task(name, params, dialect.value == "1.0")
        if asked is not None:
            attributes[names.TASK_ID] = asked
        with tracer().start_as_current_span(
            span_name,
            context=_parent_of(headers) if headers else None,
            kind=server,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as current:
            try:
                result = method(params, ctx, dialect)
            except Exception as exc:
                mark_failed(current, str(getattr(exc, "code", "")) or type(exc).__qualname__)
                raise
            found = _task_attributes(result)
            if found:
                current.set_attributes(found)
            return result

    return traced


def _parent_of(headers: Mapping[str, str]) -> Any:
    """The caller's trace context, by the global propagator (W3C Trace Context
    and baggage unless the project set another), when ``headers`` carry any
    of its fields; None otherwise (the propagator is not run for nothing)."""
    from opentelemetry import propagate

    textmap = propagate.get_global_textmap()
    if not any(field in headers for field in textmap.fields):
        return None
    return propagate.extract(headers)


def _asked_task(operation: str, params: Any, v1: bool) -> str | None:
    """The Task a request names: ``id`` (GetTask, CancelTask, SubscribeToTask;
    v0.3's push configs), ``taskId`` (v1.0's push configs), or its message's
    ``taskId`` (a continuation)."""
    if not isinstance(params, dict):
        return None
    message = params.get("message")
    by_id = operation in ("get", "cancel", "subscribe") or (operation[:5] == "push-" and not v1)
    found = params.get("id") if by_id else None
    found = found or params.get("taskId")
    found = found or (message.get("taskId") if isinstance(message, dict) else None)
    return found if isinstance(found, str) else None


def _task_attributes(result: Any) -> dict[str, Any]:
    """The Task a result carries: its id, state and contextId."""
    task = getattr(result, "task", None) or getattr(result, "first", None) or result
    if isinstance(task, dict) and isinstance(task.get("task"), dict):
        task = task["task"]
    if not isinstance(task, dict) or not isinstance(task.get("status"), dict):
        return {}
    return _clean(
        {
            names.TASK_ID: task.get("id"),
            names.TASK_STATE: names.task_state(task["status"].get("state")),
            names.CONVERSATION: task.get("contextId"),
        }
    )


# -- push deliveries ------------------------------------------------------------------


@contextmanager
def push_span(
    task_id: str, state: str, task: Any, private_of: Callable[[Any], Any]
) -> Iterator[Callable[[str], str]]:
    """A ``push notification`` CLIENT span for one event of ``task_id`` (its
    ``state``), in the Task's trace (``private_of(task).trace``, read only
    when traced). Yields ``outcome_of(outcome) -> outcome``, which records it:
    anything but delivered (or given up on, for good) fails the span."""
    if not recording():
        yield _same
        return
    attributes = {names.TASK_ID: task_id, names.TASK_STATE: names.task_state(state)}
    started = (private_of(task).trace or {}).get("start")
    with span("push notification", attributes, kind="CLIENT", parent=started) as current:

        def outcome_of(outcome: str) -> str:
            current.set_attribute(names.PUSH_OUTCOME, outcome)
            if outcome not in ("delivered", "gave-up"):
                mark_failed(current, outcome)
            return outcome

        yield outcome_of


def _same(outcome: str) -> str:
    return outcome
