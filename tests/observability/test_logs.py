"""Log lines that join up: a record of a run or a request carries its Task's id
(and, when the project traces, the trace id) through ``TaskFilter``, and
``JSONFormatter`` ships each as one JSON line with no new dependency."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from opentelemetry.sdk.trace import TracerProvider

from tests.utils import task_in
from toolnexus_django.observability.logs import (
    JSONFormatter,
    TaskFilter,
    about_task,
    naming_task,
    note_task,
)
from toolnexus_django.testing import ScriptedModel, run_task, say


class Kept(logging.Handler):
    """Keeps each record as the filter left it."""

    def __init__(self) -> None:
        super().__init__()
        self.addFilter(TaskFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Iterator[Kept]:
    handler = Kept()
    logger = logging.getLogger("toolnexus_django")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def filtered(message: str, **extra: Any) -> logging.LogRecord:
    record = logging.LogRecord("toolnexus_django.x", logging.INFO, __file__, 1, message, (), None)
    record.__dict__.update(extra)
    TaskFilter().filter(record)
    return record


def test_a_record_names_the_task_it_is_about_and_none_outside() -> None:
    with about_task("t-1"):
        inside = filtered("moved")
    assert inside.task_id == "t-1"
    assert filtered("idle").task_id == ""


def test_a_task_noted_in_a_scope_is_forgotten_when_the_scope_ends() -> None:
    with about_task(""):
        note_task("t-2")
        assert filtered("read").task_id == "t-2"
    assert filtered("after").task_id == ""


def test_a_record_carries_the_current_spans_trace_and_span_ids() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("request") as span:
        record = filtered("inside a span")
    context = span.get_span_context()
    assert record.trace_id == format(context.trace_id, "032x")
    assert record.span_id == format(context.span_id, "016x")
    assert (filtered("no span").trace_id, filtered("no span").span_id) == ("", "")


def test_a_json_line_holds_the_message_the_ids_the_extras_and_the_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        exc_info = sys.exc_info()
    record = logging.LogRecord(
        "toolnexus_django.push", logging.WARNING, __file__, 1, "Task %s: %s", ("t-3", "x"), exc_info
    )
    record.attempt = 2
    with about_task("t-3"):
        TaskFilter().filter(record)
    line = json.loads(JSONFormatter().format(record))
    assert line["message"] == "Task t-3: x"
    assert (line["level"], line["logger"], line["task_id"]) == (
        "WARNING",
        "toolnexus_django.push",
        "t-3",
    )
    assert line["attempt"] == 2
    assert "ValueError: boom" in line["exception"]
    assert line["time"].endswith("+00:00")
    assert "trace_id" not in line  # unknown ids are left out, not empty


def test_a_runs_database_work_on_a_bare_thread_names_its_task() -> None:
    seen: list[str] = []

    async def on_a_bare_thread(fn: Any, *args: Any) -> Any:
        # run_in_executor, unlike asyncio.to_thread, does not carry the context
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def run() -> None:
        await naming_task(on_a_bare_thread, "t-4")(lambda: seen.append(filtered("db").task_id))
        await on_a_bare_thread(lambda: seen.append(filtered("db").task_id))

    asyncio.run(run())
    assert seen == ["t-4", ""]


@pytest.mark.django_db(transaction=True)
def test_every_line_of_a_run_names_its_task(kept: Kept) -> None:
    with ScriptedModel(say("Done.")):
        done = run_task("hello")
    # The run's own lines (its claim and its outcome: not the send before it).
    lines = [r for r in kept.records if "(submit)" not in r.getMessage()]
    assert [r.getMessage().rsplit(" ", 1)[-1] for r in lines if done.task_id in r.getMessage()] == [
        "(claim)",
        "(complete)",
    ]
    assert {r.task_id for r in lines if r.name != "toolnexus_django.agent.runtime"} == {
        done.task_id
    }


@pytest.mark.django_db
def test_a_requests_lines_name_the_task_it_is_about(kept: Kept, client: Client) -> None:
    waiting = task_in("input-required")
    kept.records.clear()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"id": waiting["id"]}}
    reply = client.post("/agent/", json.dumps(body), content_type="application/json")
    assert reply.json()["result"]["status"]["state"] == "canceled"
    moved = [r for r in kept.records if "canceled" in r.getMessage()]
    assert moved and {r.task_id for r in moved} == {waiting["id"]}
    logging.getLogger("toolnexus_django.lifecycle").info("after the request")
    assert kept.records[-1].task_id == ""
