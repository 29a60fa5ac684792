"""The database threads (toolnexus_django/runtime/dbthreads.py) outlive a database
restart: a connection that broke while its thread waited is replaced on the
next call, which then succeeds, instead of failing one request per thread."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.db import OperationalError, connection, connections

from toolnexus_django.runtime import dbthreads

pytestmark = pytest.mark.django_db(transaction=True)


def backend_pid() -> int:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def test_a_connection_killed_while_its_thread_waits_is_replaced() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("terminates a PostgreSQL backend; this run's database is sqlite")
    pool = dbthreads.DatabaseThreads(1)

    async def on_the_thread(fn: object) -> int:
        return await pool.submit(asyncio.get_running_loop(), fn, ())  # type: ignore[no-any-return]

    try:
        first = asyncio.run(on_the_thread(backend_pid))
        with connection.cursor() as cursor:  # what a restart does to it
            cursor.execute("SELECT pg_terminate_backend(%s)", [first])
        second = asyncio.run(on_the_thread(backend_pid))
        assert second != first  # a new connection, and the call succeeded on it
    finally:
        pool.close(timeout=5)


def test_a_failure_after_work_was_done_is_not_run_again() -> None:
    calls: list[int] = []
    pool = dbthreads.DatabaseThreads(1)

    def work() -> None:
        calls.append(1)
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
        raise OperationalError("the database went away half way")

    async def run() -> None:
        await pool.submit(asyncio.get_running_loop(), work, ())

    try:
        with pytest.raises(OperationalError):
            asyncio.run(run())
        assert calls == [1]
    finally:
        pool.close(timeout=5)


def test_sqlite_gets_fewer_threads_unless_the_project_sets_them(settings: Any) -> None:
    """SQLite takes one writer at a time: unset, DATABASE_THREADS is 4 there
    (16 elsewhere); a project's own value, or ``--threads``, always wins."""
    unset = {k: v for k, v in settings.TOOLNEXUS.items() if k != "DATABASE_THREADS"}
    settings.TOOLNEXUS = unset
    default = dbthreads.SQLITE_THREADS if connection.vendor == "sqlite" else 16
    assert dbthreads.threads() == default
    settings.TOOLNEXUS = {**unset, "DATABASE_THREADS": 9}
    assert dbthreads.threads() == 9
    try:
        dbthreads.threads_override = 3
        assert dbthreads.threads() == 3
    finally:
        dbthreads.threads_override = None
