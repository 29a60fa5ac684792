"""Log lines that join up: each record of a request or a run carries its Task's
id, and — when the project traces with OpenTelemetry — the trace and span ids,
so a line in the logs leads to the Task in the admin and to its trace.

A project adds the filter to its handlers (and, to ship JSON, the formatter):

.. code-block:: python

    LOGGING = {
        "version": 1,
        "filters": {"task": {"()": "toolnexus_django.observability.logs.TaskFilter"}},
        "formatters": {"json": {"()": "toolnexus_django.observability.logs.JSONFormatter"}},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "filters": ["task"],
                        "formatter": "json"},
        },
        "root": {"handlers": ["console"], "level": "INFO"},
    }

The Task id lives in a context variable: the run sets it for its coroutine
(and the threads and tasks it starts, which copy the context), a request once
it knows which Task it is about.
"""

from __future__ import annotations

import contextvars
import datetime
import functools
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

_task: contextvars.ContextVar[str] = contextvars.ContextVar("toolnexus_log_task", default="")

#: What a record of Python's logging carries on its own; the rest of its
#: ``__dict__`` is what ``extra=`` added, which the JSON line keeps.
_RECORD_FIELDS = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "task_id",
    "trace_id",
    "span_id",
}


@contextmanager
def about_task(task_id: str) -> Iterator[None]:
    """Log the enclosed code's records as about ``task_id``."""
    token = _task.set(task_id)
    try:
        yield
    finally:
        _task.reset(token)


def note_task(task_id: str) -> None:
    """Log the rest of the current context (a request's) as about ``task_id``."""
    _task.set(task_id)


def current_task_id() -> str:
    return _task.get()


def in_task(task_id: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` with its log lines about ``task_id``."""
    with about_task(task_id):
        return fn(*args, **kwargs)


def naming_task(db: Callable[..., Awaitable[T]], task_id: str) -> Callable[..., Awaitable[T]]:
    """``db`` (a run's way to its database work, done on another thread,
    which does not share the run's context) with that work's log lines about
    ``task_id``."""

    async def named(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> T:
        return await db(functools.partial(in_task, task_id, fn), *args, **kwargs)

    return named


def trace_ids() -> tuple[str, str]:
    """The current span's trace and span ids (hex), or empty strings when
    OpenTelemetry is not in use — it is never imported here for a log line."""
    if "opentelemetry.trace" not in sys.modules:
        return "", ""
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return "", ""
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


class TaskFilter(logging.Filter):
    """Adds ``task_id``, ``trace_id`` and ``span_id`` to every record (empty
    when unknown), for a format string (``%(task_id)s``) or a JSON line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "task_id", ""):
            record.task_id = _task.get()
        if not getattr(record, "trace_id", ""):
            record.trace_id, record.span_id = trace_ids()
        return True


class JSONFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, RFC 3339), level, logger, message,
    the Task and trace ids when known, what ``extra=`` added, and the
    traceback of an exception."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in ("task_id", "trace_id", "span_id"):
            value = getattr(record, name, "")
            if value:
                line[name] = value
        for name, value in record.__dict__.items():
            if name not in _RECORD_FIELDS and not name.startswith("_"):
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)
