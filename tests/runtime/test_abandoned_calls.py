"""Abandoned model calls never take capacity from new runs.

A run that outlives RUN_TIMEOUT, or is canceled, leaves its blocking model
call behind on an IO thread. These tests pile up more such calls than the IO
pool has threads and check that a run against a healthy model still
completes; plus fast unit tests of the pieces (the budget-aware pool and the
transport clamp), without a server or network.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang, Text
from toolnexus_django.agent.runtime import (
    IO_THREADS,
    AbandonedCall,
    AgentRuntime,
    BudgetedTransport,
    RunDeadlineExceeded,
    RunHandle,
    build_client,
)
from toolnexus_django.runtime.threads import DaemonThreadPool, PoolStats, RunBudget, within_budget

pytestmark = pytest.mark.django_db(transaction=True)

#: More hung runs than the runtime's IO pool has threads.
HUNG = 50
assert HUNG > IO_THREADS


def slow_client(fake: FakeLLM) -> dict[str, Any]:
    """A client whose own per-call timeout is far longer than any test."""
    return {
        "base_url": fake.url,
        "style": fake.style,
        "model": "test-model",
        "api_key": "test-key",
        "retries": 0,
        "timeout_ms": 120_000,
    }


def state_and_reason(rpc: RpcClient, task_id: str) -> tuple[str, str]:
    task = rpc.get(task_id)["result"]
    parts = (task["status"].get("message") or {}).get("parts") or [{}]
    return task["status"]["state"], str(parts[0].get("text", ""))


def healthy_run_completes(rpc: RpcClient, fake: FakeLLM) -> None:
    fake.on("healthy marker", Text("healthy"))
    task = rpc.send("healthy marker: answer at once")
    done = rpc.wait(task["id"], timeout=30)
    assert done["status"]["state"] == "completed", done["status"]
    assert done["artifacts"][0]["parts"][0]["text"] == "healthy"


# -- over real HTTP ---------------------------------------------------------------


@pytest.mark.slow
def test_hung_calls_past_run_timeout_leave_room_for_the_next_run(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    # The store plays no part here; memory keeps 50 Tasks quick.
    # Runs in flight bounded as low as the IO pool, so the hung calls outnumber it.
    configure(fake_llm, store="memory", client=slow_client(fake_llm), RUN_TIMEOUT=0.5, MAX_RUNS=8)
    for i in range(HUNG):
        fake_llm.on(f"hung task {i}.", Hang(max_seconds=60, then=Text("too late")))
    try:
        ids = [rpc.send(f"hung task {i}.")["id"] for i in range(HUNG)]

        def all_timed_out() -> bool:
            outcomes = [state_and_reason(rpc, task_id) for task_id in ids]
            if any(state in ("submitted", "working") for state, _ in outcomes):
                return False
            assert all(
                state == "failed" and reason.startswith("The run took longer than RUN_TIMEOUT")
                for state, reason in outcomes
            ), outcomes
            return True

        wait_until(all_timed_out, timeout=90, interval=0.2, what="every hung run to time out")
        healthy_run_completes(rpc, fake_llm)
    finally:
        fake_llm.release()


@pytest.mark.slow
def test_canceled_hung_calls_leave_room_for_the_next_run(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    # No RUN_TIMEOUT: nothing clamps these calls, only the pool can help.
    configure(fake_llm, store="memory", client=slow_client(fake_llm), RUN_TIMEOUT=None, MAX_RUNS=8)
    batch, batches = 8, 5  # MAX_RUNS runs at a time; 40 calls in all
    assert batch * batches > IO_THREADS
    try:
        for b in range(batches):
            ids = []
            for i in range(batch):
                marker = f"canceled task {b}-{i}."
                fake_llm.on(marker, Hang(max_seconds=60, then=Text("too late")))
                ids.append(rpc.send(marker)["id"])
            # Every call of the batch is on an IO thread, held by the model.
            fake_llm.wait_held((b + 1) * batch, timeout=20)
            for task_id in ids:
                reply = rpc.call("tasks/cancel", {"id": task_id})
                assert reply["result"]["status"]["state"] == "canceled", reply
            # Their runs are over (the Tasks' worker threads are free again).
            from toolnexus_django.fulfilment.leases import keeper

            def runs_ended(ids: list[str] = ids) -> bool:
                return all(keeper().get(t) is None for t in ids)

            wait_until(runs_ended, timeout=20, what="the canceled runs to end")
        assert fake_llm.held == batch * batches
        healthy_run_completes(rpc, fake_llm)
    finally:
        fake_llm.release()


# -- the pool, without a server ------------------------------------------------------


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Holds blocking work until the test ends (or sets it)."""
    event = threading.Event()
    yield event
    event.set()


def hold(gate: threading.Event, started: threading.Semaphore) -> str:
    started.release()
    gate.wait(30)
    return "held"


def test_abandoned_work_stops_counting(gate: threading.Event) -> None:
    pool = DaemonThreadPool(1, name="test-pool")
    started = threading.Semaphore(0)
    try:
        budget = RunBudget()
        with within_budget(budget):
            stuck = pool.submit(hold, gate, started)
        assert started.acquire(timeout=10)
        other = pool.submit(lambda: "ran")
        assert pool.stats().queued == 1  # the one thread is taken: it waits

        budget.abandon()  # the stuck work's run is over: room for the next
        assert other.result(timeout=10) == "ran"
        assert pool.stats().abandoned == 1

        gate.set()
        assert stuck.result(timeout=10) == "held"
        wait_until(lambda: pool.stats().threads <= 1, timeout=10, what="the surplus thread")
        assert pool.submit(lambda: "again").result(timeout=10) == "again"
    finally:
        assert pool.shutdown(wait=True, timeout=10)


def test_the_ceiling_holds_and_surplus_threads_exit(gate: threading.Event) -> None:
    pool = DaemonThreadPool(2, name="test-pool", ceiling=5)
    started = threading.Semaphore(0)
    try:
        futures = []
        # Three runs of two calls each, abandoned in turn: the third run finds
        # room for one thread only (5 in all), its second call waits.
        for starts in (2, 2, 1):
            budget = RunBudget()
            with within_budget(budget):
                futures += [pool.submit(hold, gate, started) for _ in range(2)]
            for _ in range(starts):
                assert started.acquire(timeout=10)
            budget.abandon()
        assert pool.stats() == PoolStats(threads=5, abandoned=5, queued=1)

        plain = pool.submit(lambda: "plain")
        assert pool.stats() == PoolStats(threads=5, abandoned=5, queued=2)

        gate.set()
        assert [f.result(timeout=10) for f in futures] == ["held"] * 6
        assert plain.result(timeout=10) == "plain"
        wait_until(lambda: pool.stats().threads <= 2, timeout=10, what="surplus threads to exit")
        assert pool.stats() == PoolStats(threads=2, abandoned=0, queued=0)
    finally:
        assert pool.shutdown(wait=True, timeout=10)


def test_unbudgeted_work_keeps_the_plain_limit(gate: threading.Event) -> None:
    pool = DaemonThreadPool(2, name="test-pool")
    started = threading.Semaphore(0)
    try:
        held = [pool.submit(hold, gate, started) for _ in range(3)]
        for _ in range(2):
            assert started.acquire(timeout=10)
        assert pool.stats().threads == 2 and pool.stats().queued == 1
        gate.set()
        assert [f.result(timeout=10) for f in held] == ["held"] * 3
    finally:
        assert pool.shutdown(wait=True, timeout=10)


# -- the runtime's IO pool: timed-out and canceled runs ----------------------------


@pytest.fixture
def small_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentRuntime]:
    """A runtime with no toolkit or client, and an IO pool of 2 threads."""

    async def no_toolkit() -> Any:
        return None

    runtime = AgentRuntime(no_toolkit, lambda: None, io_threads=2).start()
    yield runtime
    runtime.stop()


def test_timed_out_runs_leave_the_io_pool_to_the_next_run(
    small_runtime: AgentRuntime, gate: threading.Event
) -> None:
    async def hung_model_call() -> bool:
        return await asyncio.to_thread(gate.wait, 30)

    for _ in range(3):  # more than the IO pool's 2 threads
        with pytest.raises(RunDeadlineExceeded):
            small_runtime.call(hung_model_call(), timeout=0.2)

    async def healthy() -> str:
        return await asyncio.to_thread(lambda: "healthy")

    assert small_runtime.call(healthy(), timeout=10) == "healthy"


def test_canceled_runs_leave_the_io_pool_to_the_next_run(
    small_runtime: AgentRuntime, gate: threading.Event
) -> None:
    class Cancelled(Exception):
        pass

    async def hung_then_canceled(handle: RunHandle, on_model: threading.Event) -> str:
        # What toolnexus's _fetch_once does: race the call against the token,
        # and leave the call behind when the token fires.
        token = handle.token()

        def model_call() -> bool:
            on_model.set()
            return gate.wait(30)

        call = asyncio.ensure_future(asyncio.to_thread(model_call))
        call.add_done_callback(lambda f: None)
        await token.wait()
        raise Cancelled

    def run(handle: RunHandle, on_model: threading.Event, outcome: list[Exception]) -> None:
        try:
            small_runtime.call(hung_then_canceled(handle, on_model), timeout=None)
        except Cancelled as exc:
            outcome.append(exc)

    for _ in range(3):  # more than the IO pool's 2 threads
        handle, on_model = RunHandle(), threading.Event()
        outcome: list[Exception] = []
        caller = threading.Thread(target=run, args=(handle, on_model, outcome))
        caller.start()
        assert on_model.wait(10), "the model call never started"
        handle.cancel()
        caller.join(10)
        assert outcome and isinstance(outcome[0], Cancelled)

    async def healthy() -> str:
        return await asyncio.to_thread(lambda: "healthy")

    assert small_runtime.call(healthy(), timeout=10) == "healthy"


# -- the transport clamp, without a network -----------------------------------------


class Recorder:
    """A transport that records the timeout of each call and answers at once."""

    def __init__(self) -> None:
        self.timeouts: list[tuple[str, float]] = []

    def post(self, url: str, headers: Any, payload: Any, timeout: float) -> dict[str, Any]:
        self.timeouts.append(("post", timeout))
        return {
            "choices": [
                {"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1},
        }

    def open(self, url: str, headers: Any, payload: Any, timeout: float) -> str:
        self.timeouts.append(("open", timeout))
        return "response"


def test_the_clamp_is_the_smaller_of_the_timeout_and_the_budget_left() -> None:
    recorder = Recorder()
    transport = BudgetedTransport(recorder)
    transport.post("u", {}, {}, 7.0)  # no run: untouched
    with within_budget(RunBudget(None)):  # a run without RUN_TIMEOUT: untouched
        transport.post("u", {}, {}, 8.0)
    with within_budget(RunBudget(1000)):  # plenty left: the client's own timeout
        transport.post("u", {}, {}, 9.0)
    with within_budget(RunBudget(0.5)):  # the budget is shorter: the budget
        transport.post("u", {}, {}, 120.0)
        assert transport.open("u", {}, {}, 120.0) == "response"
    assert recorder.timeouts[:3] == [("post", 7.0), ("post", 8.0), ("post", 9.0)]
    (_, clamped_post), (kind, clamped_open) = recorder.timeouts[3:]
    assert kind == "open"
    assert 0 < clamped_post <= 0.5 and 0 < clamped_open <= 0.5


def test_no_call_starts_for_a_run_that_is_over() -> None:
    recorder = Recorder()
    transport = BudgetedTransport(recorder)
    for budget in (RunBudget(0), RunBudget(60)):
        budget.abandon()
        with within_budget(budget), pytest.raises(AbandonedCall):
            transport.post("u", {}, {}, 5.0)
    assert recorder.timeouts == []


def test_build_client_wraps_the_configured_transport() -> None:
    recorder = Recorder()
    client = build_client(
        {
            "base_url": "http://model.invalid/v1",
            "style": "openai",
            "model": "m",
            "api_key": "k",
            "timeout_ms": 120_000,
            "http_transport": recorder,
        }
    )

    async def run() -> Any:
        with within_budget(RunBudget(3)):
            return await client.run("hello")

    assert asyncio.run(run()).text == "hi"
    [(kind, timeout)] = recorder.timeouts
    assert kind == "post" and 0 < timeout <= 3


class _Pause:
    def __await__(self) -> Iterator[None]:
        yield


def test_a_run_closed_outside_the_context_it_ran_in_closes_quietly() -> None:
    # A run's coroutine still pending when its loop closed is closed later by
    # the garbage collector, in another context: leaving its budget must not raise.
    async def run() -> None:
        with within_budget(RunBudget(5)):
            await _Pause()

    coro = run()
    contextvars.copy_context().run(coro.send, None)  # suspended inside its own context
    coro.close()  # from here: no ValueError about a token of another Context
