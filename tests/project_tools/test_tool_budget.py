"""How a tool call uses threads and connections (toolnexus_django/tools/budget.py):
one tool thread per call, taken when the call first needs a thread and
handed back when it ends; at most TOOL_THREADS at once; calls that need no
thread never wait; SQLite's write lock is not held across a tool's work.

The tools run on a real agent runtime's loop (its IO pool is the loop's
default executor, where ``asyncio.to_thread`` goes), as the runner runs them;
tests/project_tools/test_tool_connections.py is the same under load on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import toolnexus
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group
from django.db import connection, connections

from toolnexus_django.agent.runtime import AgentRuntime
from toolnexus_django.tools import budget, budgeted, tool

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def runtime() -> Iterator[AgentRuntime]:
    async def no_toolkit() -> Any:
        return None

    made = AgentRuntime(no_toolkit, lambda: None, io_threads=4).start()
    yield made
    made.stop()


@pytest.fixture
def tool_threads(settings: Any) -> Iterator[Any]:
    """Two tool threads of this test's own, shut down after it."""
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "TOOL_THREADS": 2}
    threads = budget.pool.get()
    assert threads.max_workers == 2
    yield threads
    budget.pool.discard(threads)
    threads.shutdown(wait=True, timeout=10)


def where() -> tuple[str, int]:
    """The calling thread's name and its database connection (opened if need be)."""
    connection.ensure_connection()
    return threading.current_thread().name, id(connection.connection)


async def together(*calls: Any) -> list[Any]:
    return list(await asyncio.gather(*calls))


def outputs(results: list[toolnexus.ToolResult]) -> list[str]:
    assert not any(r.is_error for r in results), [r.output for r in results]
    return [r.output for r in results]


def test_a_calls_thread_work_shares_one_tool_thread_and_so_one_connection(
    runtime: AgentRuntime, tool_threads: Any
) -> None:
    # The async ORM (thread-sensitive sync_to_async) and asyncio.to_thread of
    # one call land on one thread: a transaction or a server-side cursor
    # (aiterator) opened by one query is there for the next.
    @toolnexus.tool(name="probe")
    async def probe() -> str:
        first = await sync_to_async(where)()
        second = await asyncio.to_thread(where)
        third = await sync_to_async(where, thread_sensitive=False)()
        return repr((first, second, third))

    calls = [budgeted(probe).execute({}) for _ in range(3)]
    for said in outputs(runtime.call(together(*calls), timeout=20)):
        first, second, third = eval(said)
        assert first == second == third
        assert first[0].startswith("toolnexus-tool")


def test_an_async_tools_orm_runs_on_the_tool_threads_and_reuses_their_connections(
    runtime: AgentRuntime, tool_threads: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With persistent connections, 12 calls share the 2 tool threads'
    # connections. (A thread of asgiref's per call, the first design, opened
    # one per call and never closed it: 287 of 500 calls were refused.)
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 60)
    seen: list[tuple[str, Any]] = []

    def note() -> str:
        connection.ensure_connection()
        seen.append((threading.current_thread().name, connection.connection))
        return "noted"

    @toolnexus.tool(name="orm")
    async def orm() -> str:
        await Group.objects.acount()
        return str(await sync_to_async(note)())

    try:
        for _ in range(12):
            assert outputs([runtime.call(budgeted(orm).execute({}), timeout=20)]) == ["noted"]
        assert all(name.startswith("toolnexus-tool") for name, _ in seen), seen
        assert len({id(conn) for _, conn in seen}) <= 2
    finally:
        for _, conn in seen:  # the tool threads' persistent connections
            conn.close()


def test_calls_past_the_tool_threads_wait_for_one_and_all_succeed(
    runtime: AgentRuntime, tool_threads: Any
) -> None:
    lock = threading.Lock()
    running = [0, 0]  # now, most at once

    @tool
    def busy(n: int) -> str:
        """Count the calls running at once."""
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        Group.objects.create(name=f"busy-{n}")
        threading.Event().wait(0.05)  # work without the database
        with lock:
            running[0] -= 1
        return f"done {n}"

    calls = [busy.execute({"n": n}) for n in range(6)]
    assert outputs(runtime.call(together(*calls), timeout=30)) == [f"done {n}" for n in range(6)]
    assert running[1] == 2
    assert Group.objects.filter(name__startswith="busy-").count() == 6


def test_async_calls_that_need_no_thread_never_wait_for_one(
    runtime: AgentRuntime, tool_threads: Any
) -> None:
    # Three calls awaiting another service at once with two tool threads:
    # none holds a thread (the first design held every call to TOOL_THREADS).
    inside = 0
    everyone: asyncio.Event | None = None

    @tool
    async def waits() -> str:
        """Wait for the other calls, as a call to another service waits."""
        nonlocal inside, everyone
        everyone = everyone or asyncio.Event()
        inside += 1
        if inside == 3:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 10)
        return "all three at once"

    calls = [waits.execute({}) for _ in range(3)]
    assert outputs(runtime.call(together(*calls), timeout=20)) == ["all three at once"] * 3


def another_writer() -> None:
    try:
        Group.objects.create(name="by-another-writer")
    finally:
        connection.close()


@pytest.mark.parametrize("kind", ["plain sync", "django sync", "django async"])
def test_the_database_is_free_for_other_writers_while_a_tool_works(
    kind: str, runtime: AgentRuntime, tool_threads: Any
) -> None:
    # On SQLite a writer holds the database's one write lock until its
    # transaction ends: a tool that wrote and then works (a model or service
    # call) must not keep it, or every other write of the process waits.
    wrote, done = threading.Event(), threading.Event()

    def write_then_work() -> str:
        Group.objects.create(name="by-the-tool")
        wrote.set()
        assert done.wait(20), "the test never let the tool finish"
        return "worked"

    async def awrite_then_work() -> str:
        await Group.objects.acreate(name="by-the-tool")
        wrote.set()
        assert await asyncio.to_thread(done.wait, 20)
        return "worked"

    made = {
        "plain sync": lambda: budgeted(toolnexus.tool(name="w")(write_then_work)),
        "django sync": lambda: tool(name="w")(write_then_work),
        "django async": lambda: tool(name="w")(awrite_then_work),
    }[kind]()
    call = runtime.run_coroutine(made.execute({}))
    try:
        assert wrote.wait(20)
        other = threading.Thread(target=another_writer)
        other.start()
        other.join(5)  # the tool is still working: the write must not wait for it
        assert not other.is_alive(), "another writer was blocked by the working tool"
    finally:
        done.set()
    assert call.result(20).output == "worked"
    assert set(Group.objects.values_list("name", flat=True)) == {"by-the-tool", "by-another-writer"}
