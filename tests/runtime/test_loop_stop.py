"""The runtime loop stops cleanly: what still runs on it is canceled and ends
on a live loop, never later against a closed one."""

from __future__ import annotations

import asyncio
import threading

from toolnexus_django.runtime.loop import LoopThread


def test_a_run_still_waiting_on_its_model_ends_before_the_loop_closes() -> None:
    gate = threading.Event()  # the "model call": a blocking call on the IO pool
    started = threading.Event()
    seen: list[str] = []

    async def run() -> None:
        started.set()
        try:
            await asyncio.to_thread(gate.wait, 30)
        except asyncio.CancelledError:
            # The run's own clean-up needs a loop that still runs.
            seen.append(f"canceled, loop closed: {asyncio.get_running_loop().is_closed()}")
            raise

    loop_thread = LoopThread(io_threads=2).start()
    try:
        future = loop_thread.run_coroutine(run())
        assert started.wait(5)
        loop_thread.stop()
        assert future.cancelled()
        assert seen == ["canceled, loop closed: False"]
        assert loop_thread.loop is not None and loop_thread.loop.is_closed()
    finally:
        gate.set()  # the abandoned call returns into a closed loop, quietly
