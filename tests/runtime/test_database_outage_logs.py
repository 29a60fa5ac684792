"""A database that is down is one log line per failure, never a traceback
(issue 29: during a 2.8 s PostgreSQL outage under load the sends got a clean
-32603, but a dozen tracebacks went to the log).

On PostgreSQL, this run's own test database (its name carries the process
id; the shared server is never stopped) refuses new connections and drops the
ones it has — but the test's own, which makes and undoes the outage — so the
app's threads find it down as in a restart. Each path is driven for real
while it is down: a send to the ASGI endpoint on a served uvicorn, a tick of
the sweep, the wake-up poller, a Django Tasks worker's job, an in-process
run, the lease keeper and a push delivery. Every record they log is one line
naming what failed and the error's first line; none carries a traceback. A
bug (not the database) keeps its traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from django.db import connection, connections

from tests.conftest import RpcClient, wait_until
from tests.utils import task_in
from toolnexus_django.agent.runtime import RunHandle
from toolnexus_django.fulfilment import jobs, runner, sweep
from toolnexus_django.fulfilment.leases import RunningRun, keeper
from toolnexus_django.fulfilment.runs import runs
from toolnexus_django.lifecycle import wakeups
from toolnexus_django.models import TaskRecord
from toolnexus_django.push import delivery
from toolnexus_django.stores import DjangoTaskStore

pytestmark = pytest.mark.django_db(transaction=True)

#: How a database that refuses connections reads, as the one line says it.
DOWN = "database unavailable (OperationalError: "


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(f"makes a PostgreSQL database refuse connections; this is {connection.vendor}")


@contextmanager
def database_down() -> Iterator[None]:
    """This run's test database refuses new connections and drops those it
    has, but the test thread's own, for the block (``ALTER DATABASE ...
    ALLOW_CONNECTIONS``, said from the server's ``postgres`` database: a
    database cannot be closed from inside)."""
    s = connection.settings_dict
    name = connection.ops.quote_name(s["NAME"])
    params = {"host": s["HOST"] or None, "port": s["PORT"] or None, "user": s["USER"] or None}
    connection.ensure_connection()  # the test's own, kept through the outage
    with psycopg.connect(dbname="postgres", password=s["PASSWORD"] or None, **params) as admin:
        admin.autocommit = True
        admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            yield
        finally:
            admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")


def on_a_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on a thread of its own (its own connection, as a worker's)."""

    def run() -> Any:
        try:
            return fn(*args)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result(timeout=30)


def lines(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    """What ``logger`` said at WARNING and above."""
    return [
        r.getMessage() for r in caplog.records if r.name == logger and r.levelno >= logging.WARNING
    ]


def assert_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    with_traceback = [r.getMessage() for r in caplog.records if r.exc_info or r.exc_text]
    assert with_traceback == []
    assert "Traceback" not in caplog.text
    assert all("\n" not in r.getMessage() for r in caplog.records)


def test_a_send_is_minus_32603_and_one_line(
    postgresql: None, asgi_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    rpc = RpcClient(f"{asgi_server.url}/agent/")
    message = {"messageId": "m-outage", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}
    with database_down():
        reply = rpc.call("SendMessage", {"message": message})
    assert reply["error"] == {"code": -32603, "message": "Internal error"}
    [said] = lines(caplog, "toolnexus_django.endpoint")
    assert said.startswith(f"JSON-RPC request failed: {DOWN}"), said
    assert_no_traceback(caplog)


def test_a_tick_of_the_sweep_is_one_line(
    postgresql: None, caplog: pytest.LogCaptureFixture
) -> None:
    housekeeper = sweep.Housekeeper(interval=0.05)
    with database_down():
        housekeeper.start()
        try:
            wait_until(
                lambda: lines(caplog, "toolnexus_django.fulfilment"), what="the sweep's failure"
            )
        finally:
            assert housekeeper.stop(timeout=5)
    said = lines(caplog, "toolnexus_django.fulfilment")
    assert all(line.startswith(f"sweep failed: {DOWN}") for line in said), said
    assert_no_traceback(caplog)


def test_a_wake_up_poll_is_one_line(postgresql: None, caplog: pytest.LogCaptureFixture) -> None:
    store = DjangoTaskStore()
    watched = wakeups.watch(store, str(task_in("working", store=store)["id"]))
    try:
        with database_down():
            wait_until(
                lambda: lines(caplog, "toolnexus_django.lifecycle"), what="the poller's failure"
            )
    finally:
        watched.close()
    said = lines(caplog, "toolnexus_django.lifecycle")
    # The poller's failures; on PostgreSQL its listener's too (it may try to
    # connect, or lose its connection, in the outage): one line each.
    listener = ("the task-event listener cannot connect to", "the task-event listener lost")
    assert all(
        line.startswith(f"polling for task events failed: {DOWN}")
        or (line.startswith(listener) and f": {DOWN}" in line)
        for line in said
    ), said
    assert_no_traceback(caplog)


def test_a_workers_job_leaves_the_task_to_recovery_in_one_line(
    postgresql: None, caplog: pytest.LogCaptureFixture
) -> None:
    task_id = str(task_in("submitted", store=DjangoTaskStore())["id"])
    with database_down():
        # What a Django Tasks worker (db_worker) calls, on its own thread.
        done = on_a_thread(jobs.fulfil.call, task_id)
    assert done == jobs.LEFT_TO_RECOVERY
    assert TaskRecord.objects.get(pk=task_id).state == "submitted"
    [said] = lines(caplog, "toolnexus_django.fulfilment")
    assert said.startswith(f"Task {task_id}: not run, left to recovery: {DOWN}"), said
    assert_no_traceback(caplog)


def test_an_in_process_run_is_one_line(postgresql: None, caplog: pytest.LogCaptureFixture) -> None:
    task_id = str(task_in("submitted", store=DjangoTaskStore())["id"])
    with database_down():
        queued = runs().start(runner.fulfil, task_id, DjangoTaskStore())
        assert queued.future is not None
        assert queued.future.result(timeout=30) == "error"
    [said] = lines(caplog, "toolnexus_django.fulfilment")
    assert said.startswith(f"Task {task_id}: the run raised: {DOWN}"), said
    assert_no_traceback(caplog)


def test_a_lease_renewal_is_one_line(
    postgresql: None, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "LEASE_SECONDS": 0.3}  # due at once
    store = DjangoTaskStore()
    run = RunningRun(store, task_in("working", store=store), RunHandle())
    with database_down():
        keeper().add(run)
        try:
            wait_until(
                lambda: lines(caplog, "toolnexus_django.fulfilment"), what="a renewal's failure"
            )
        finally:
            keeper().remove(run)
    said = lines(caplog, "toolnexus_django.fulfilment")
    assert all(line.startswith(f"lease renewal of 1 run(s) failed: {DOWN}") for line in said)
    assert_no_traceback(caplog)


def test_a_push_delivery_is_one_line(postgresql: None, caplog: pytest.LogCaptureFixture) -> None:
    with database_down():
        on_a_thread(delivery._run_queued, 1, "default")
    [said] = lines(caplog, "toolnexus_django.push")
    assert said.startswith(f"push delivery of config 1: {DOWN}"), said
    assert_no_traceback(caplog)


def test_a_bug_keeps_its_traceback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Not the database: the sweep that raised is logged with its traceback."""

    def broken() -> dict[str, Any]:
        raise ValueError("a bug in a sweep")

    monkeypatch.setattr(sweep, "EXTRA_SWEEPS", [broken])
    sweep.sweep_once()
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.exc_info is not None and "ValueError: a bug in a sweep" in caplog.text
