"""The poller's beat against the django store on the test database: it finds
this process's moves in the event log too, and a waiter already handed that
version by the move is neither woken nor sent to the store again; another
process's move (a higher seq) still wakes it to read.

The hub here beats when the test says (no poller thread); "another process"
is a move made while the verbs wake a hub of their own, so only its event in
the log tells this process's hub about it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

from tests.conftest import wait_until
from tests.counting import CountingStore
from toolnexus_django import lifecycle
from toolnexus_django.a2a import follow
from toolnexus_django.lifecycle import wakeups, watches
from toolnexus_django.stores import DjangoTaskStore, InMemoryTaskStore
from toolnexus_django.stores.base import Task, state_of

pytestmark = pytest.mark.django_db(transaction=True)


class Beats(wakeups.Hub):
    """A hub whose poller beats when the test calls :meth:`beat`."""

    def _start_poller(self) -> None:
        pass


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Beats]:
    beats = Beats()
    monkeypatch.setattr(wakeups, "hub", lambda: beats)
    yield beats


def submitted(store: Any) -> Task:
    message = {"messageId": str(uuid.uuid4()), "role": "user", "parts": [{"kind": "text"}]}
    message["parts"][0]["text"] = "file my claim"
    return lifecycle.submit(store, message, owner=None, text="file my claim").task


def elsewhere(monkeypatch: pytest.MonkeyPatch, move: Any, *args: Any, **kwargs: Any) -> Any:
    """``move`` as another process makes it: it wakes that process's hub only."""
    with monkeypatch.context() as there:
        there.setattr(wakeups, "hub", Beats)
        return move(DjangoTaskStore(), *args, **kwargs)


def test_a_local_move_found_by_the_poller_is_not_news(hub: Beats) -> None:
    store = CountingStore()
    task = submitted(store)
    with wakeups.watch(store, task["id"]) as watch:
        claimed = lifecycle.claim(store, task, worker="w-1")
        assert claimed is not None
        hub.beat()  # finds the claim's event (seq 2): the move handed it over already
        assert watch.wait(0)  # woken once, by the move
        assert watch.news(task) is claimed.task
        done = lifecycle.complete(store, claimed.task, "filed")
        assert done is not None
        assert watch.wait(0)
        assert watch.news(claimed.task) is done.task
        hub.beat()  # finds the completion (seq 3), told already
        assert not watch.wait(0)
    assert store.gets == 0


def test_a_blocking_wait_is_not_sent_to_the_store_by_the_poller(hub: Beats) -> None:
    store = CountingStore()
    task = submitted(store)

    def run() -> None:
        try:
            wait_until(lambda: hub.watching == 1, timeout=10, what="the waiter")
            claimed = lifecycle.claim(store, task, worker="w-1")
            assert claimed is not None
            hub.beat()
            lifecycle.complete(store, claimed.task, "filed")
            hub.beat()
        finally:
            connections.close_all()

    mover = threading.Thread(target=run)
    mover.start()
    try:
        done = follow.wait_settled(store, task, timeout=10)
    finally:
        mover.join(10)
    assert state_of(done) == "completed"
    assert store.gets == 1  # once after watching; the beats brought nothing new


def test_another_process_move_wakes_the_waiter_to_read(
    hub: Beats, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CountingStore()
    task = submitted(store)
    with wakeups.watch(store, task["id"]) as watch:
        claimed = lifecycle.claim(store, task, worker="w-1")  # here: seq 2, handed over
        assert claimed is not None
        assert watch.wait(0) and watch.news(task) is claimed.task
        done = elsewhere(monkeypatch, lifecycle.complete, claimed.task, "filed")  # seq 3
        assert done is not None
        assert not watch.wait(0)  # nothing told this process yet
        # The log tells each Task's newest seq since the cursor: 3, not this process's 2.
        assert store.changes_since(hub._cursors[id(store)])[1] == {task["id"]: 3}
        hub.beat()
        assert watch.wait(0)
        assert watch.news(claimed.task) is None  # read the store
    assert state_of(store.get(task["id"])) == "completed"


def test_a_store_telling_only_ids_wakes_the_waiter_to_read(hub: Beats) -> None:
    class IdsOnly(DjangoTaskStore):
        def changes_since(self, cursor: Any) -> tuple[Any, set[str]] | None:
            changes = super().changes_since(cursor)
            assert changes is not None
            return changes[0], set(changes[1])

    store = IdsOnly()
    task = submitted(store)
    with wakeups.watch(store, task["id"]) as watch:
        claimed = lifecycle.claim(store, task, worker="w-1")
        assert claimed is not None
        assert watch.wait(0) and watch.news(task) is claimed.task
        hub.beat()  # an id without a seq: it may be anyone's move
        assert watch.wait(0)
        assert watch.news(claimed.task) is None


def test_a_store_that_cannot_tell_is_read_and_its_seq_compared(hub: Beats) -> None:
    store = InMemoryTaskStore()
    task = submitted(store)
    with wakeups.watch(store, task["id"]) as watch:
        claimed = lifecycle.claim(store, task, worker="w-1")
        assert claimed is not None
        assert watch.wait(0) and watch.news(task) is claimed.task
        hub.beat()  # reads the Task: seq 2, handed over
        assert not watch.wait(0)
        with pytest.MonkeyPatch.context() as there:
            there.setattr(wakeups, "hub", Beats)  # another process's move, seq 3
            assert lifecycle.complete(store, claimed.task, "filed") is not None
        hub.beat()
        assert watch.wait(0)
        assert watch.news(claimed.task) is None


class EventReads(InMemoryTaskStore):
    """A memory store counting the reads of a Task's events (a stream's look)."""

    def __init__(self) -> None:
        super().__init__()
        self.event_reads = 0

    def events(self, task_id: str, after: int = 0) -> list[Any]:
        self.event_reads += 1
        return super().events(task_id, after=after)


def test_a_quiet_stream_sends_keep_alives_without_reading_the_store(
    hub: Beats, settings: Any
) -> None:
    """One look as it begins, then only when woken: 1,000 quiet streams
    re-read their events twice a heartbeat before (133 reads a second)."""
    import asyncio

    from toolnexus_django.a2a.dialects import Dialect

    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "STREAM_HEARTBEAT": 0.05}
    store = EventReads()
    task = submitted(store)

    async def run_sync(fn: Any, *args: Any) -> Any:
        return fn(*args)

    async def stream() -> tuple[int, int, list[str]]:
        said: list[str] = []
        stream = follow.afollow(store, task, Dialect.V10, run_sync)
        keep_alives = 0
        async for message in stream:
            if message is None:
                keep_alives += 1
                if keep_alives == 5:  # quiet all along: now a move
                    reads = store.event_reads
                    claimed = lifecycle.claim(store, task, worker="w-1")
                    assert claimed is not None
                    lifecycle.complete(store, claimed.task, "filed")
                    continue
            else:
                said.append(message.id or "")
        return reads, store.event_reads, said

    quiet_reads, reads, said = asyncio.run(asyncio.wait_for(stream(), timeout=10))
    assert quiet_reads == 1  # the look as it began; none per keep-alive
    assert reads == 2  # woken by the moves: one look finds both
    assert said == ["1", "2", "2.1", "3"]  # the Task, the claim, the artifact, the completion


# -- a wake-up that lands as a wait times out -----------------------------------------------


@pytest.mark.parametrize("lands", ["before the timer ends the wait", "after it"])
def test_a_wake_up_landing_as_an_async_wait_times_out_is_not_lost(
    monkeypatch: pytest.MonkeyPatch, lands: str
) -> None:
    """The race a loaded loop makes likely (benchmarks/stream_capacity.py lost
    final events to it): the mover's wake-up (from its thread) lands as the
    wait's timer fires. The waiter must see it — now or on its next wait."""
    import asyncio

    watch = wakeups.Watch(wakeups.Hub(), "t-1")
    real_timed_out = watches._timed_out

    def mover() -> None:
        thread = threading.Thread(target=watch._wake)  # the mover's thread...
        thread.start()
        thread.join()  # ...its loop callback queued behind this one

    def woken_as_it_times_out(waiter: Any) -> None:
        if lands == "after it":
            real_timed_out(waiter)
        mover()
        real_timed_out(waiter)

    async def scenario() -> list[bool]:
        monkeypatch.setattr(watches, "_timed_out", woken_as_it_times_out)
        first = await watch.wait_async(0.01)
        monkeypatch.setattr(watches, "_timed_out", real_timed_out)
        again = await watch.wait_async(0.05)
        return [first, again]

    seen = asyncio.run(scenario())
    assert seen[0] or seen[1], "the wake-up was lost"
    assert seen.count(True) == 1  # and taken once


def test_wake_ups_from_a_thread_racing_short_async_waits_are_each_seen_once() -> None:
    """Many rounds of a mover's thread waking as the waiter's short waits
    time out: each wake-up is seen by the wait it raced or the next one, once."""
    import asyncio
    import random

    watch = wakeups.Watch(wakeups.Hub(), "t-4")
    rng = random.Random(32)

    async def scenario() -> list[tuple[bool, bool]]:
        seen = []
        for _ in range(300):
            delay = rng.random() * 0.002

            def mover(delay: float = delay) -> None:
                time.sleep(delay)
                watch._wake()

            thread = threading.Thread(target=mover)
            thread.start()
            first = await watch.wait_async(rng.random() * 0.002)
            await asyncio.to_thread(thread.join)
            seen.append((first, await watch.wait_async(0)))
        return seen

    rounds = asyncio.run(scenario())
    assert all(first != second for first, second in rounds), [r for r in rounds if r[0] == r[1]]


def test_an_interrupted_async_wait_ends_at_once_and_keeps_a_later_wake_up() -> None:
    """``interrupt`` (the stream's client went away) ends the wait as a
    timeout does: the Task did not move."""
    import asyncio

    watch = wakeups.Watch(wakeups.Hub(), "t-5")

    async def scenario() -> list[bool]:
        loop = asyncio.get_running_loop()
        loop.call_later(0.01, watch.interrupt)
        began = loop.time()
        first = await watch.wait_async(30)
        assert loop.time() - began < 5
        watch._wake()
        woken = await watch.wait_async(30)  # a move is still news
        began = loop.time()
        later = await watch.wait_async(30)  # ...but no later wait waits
        assert loop.time() - began < 5
        return [first, woken, later]

    assert asyncio.run(scenario()) == [False, True, False]


def test_an_interrupt_between_waits_ends_the_next_wait_at_once() -> None:
    """The client went away while its stream was reading the store (no wait
    in progress to end): the stream's next wait must not wait."""
    import asyncio

    watch = wakeups.Watch(wakeups.Hub(), "t-6")

    async def scenario() -> float:
        watch.interrupt()
        loop = asyncio.get_running_loop()
        began = loop.time()
        assert await watch.wait_async(30) is False
        return loop.time() - began

    assert asyncio.run(scenario()) < 5


def test_a_wake_up_whose_loop_callback_is_still_queued_wakes_the_next_wait() -> None:
    """Timed out before the wake's event.set ran on the loop: nothing is
    cleared, so the next wait returns at once."""
    import asyncio

    watch = wakeups.Watch(wakeups.Hub(), "t-2")

    async def scenario() -> list[bool]:
        await watch.wait_async(0)
        first = await watch.wait_async(0)  # times out...
        watch._wake()  # ...then the wake-up lands, its event.set queued
        return [first, await watch.wait_async(5)]

    assert asyncio.run(scenario()) == [False, True]


def test_a_wake_up_landing_as_a_blocking_wait_times_out_is_not_lost() -> None:
    watch = wakeups.Watch(wakeups.Hub(), "t-3")

    class WokenAsItTimesOut(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            if timeout == 5:  # the first wait: the move lands as it gives up
                self.set()
                return False
            return super().wait(timeout)

    watch._moved = WokenAsItTimesOut()
    assert watch.wait(5) is False
    assert watch.wait(0.05) is True  # the move is seen, not lost
    assert watch.wait(0) is False  # and only once
