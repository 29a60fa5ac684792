"""A streamed run's live updates, made from toolnexus's stream events: the
answer in coalesced chunks that add up to it, each tool call as it starts
and ends, never a tool's output (toolnexus_django/fulfilment/progress.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from toolnexus_django.fulfilment.progress import RunProgress
from toolnexus_django.lifecycle import live
from toolnexus_django.stores import InMemoryTaskStore

Events = list[dict[str, Any]]


def text(*pieces: str) -> Events:
    return [{"type": "text", "delta": p} for p in pieces]


def call(call_id: str, name: str, args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "args": args}


def result(call_id: str, name: str, *, error: bool = False) -> dict[str, Any]:
    output = "SECRET tool output: card 4111-1111-1111-1111"
    return {"type": "tool_result", "id": call_id, "name": name, "output": output, "is_error": error}


async def _db(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def progress_of(events: Events) -> tuple[list[live.Update], RunProgress]:
    """The updates a run makes of ``events`` (its feed, once it finished)."""

    async def run() -> tuple[list[live.Update], RunProgress]:
        progress = RunProgress(InMemoryTaskStore(), "t-1", 2, _db)
        try:
            for event in events:
                progress.take(event)
            await progress.finish()
            return progress.feed.after(0), progress
        finally:
            progress.close()

    return asyncio.run(run())


def answer_of(updates: list[live.Update]) -> str:
    """The answer as a client assembles it: a reset starts it anew."""
    out = ""
    for update in updates:
        if "text" in update:
            out = update["text"] if update["reset"] else out + update["text"]
    return out


Tune = Callable[..., None]


@pytest.fixture
def tune(settings: Any) -> Tune:
    """``tune(**TOOLNEXUS keys)`` for this test."""

    def set_(**keys: Any) -> None:
        settings.TOOLNEXUS = {**settings.TOOLNEXUS, **keys}

    return set_


@pytest.fixture
def slow_chunks(tune: Tune) -> None:
    # No chunk is due by time in these tests: only the first, the bound, the end.
    tune(STREAM_CHUNK_SECONDS=3600, STREAM_CHUNK_CHARS=1000)


def test_the_first_chunk_goes_at_once_and_the_rest_waits_its_turn(slow_chunks: None) -> None:
    updates, progress = progress_of(text("Filed", " claim", " EXP-1", "."))
    assert [u["text"] for u in updates] == ["Filed", " claim EXP-1."]
    assert [u["n"] for u in updates] == [1, 2]
    assert [u["reset"] for u in updates] == [True, False]
    assert {u["artifact"] for u in updates} == {live.answer_artifact_id("t-1")}
    assert progress.first_text_ms is not None and progress.first_text_ms >= 0


def test_a_chunk_goes_once_enough_characters_wait(tune: Tune) -> None:
    tune(STREAM_CHUNK_SECONDS=3600, STREAM_CHUNK_CHARS=4)
    updates, _ = progress_of(text("a", "b", "c", "d", "e", "f"))
    assert [u["text"] for u in updates] == ["a", "bcde", "f"]
    assert answer_of(updates) == "abcdef"


def test_with_no_interval_every_delta_is_a_chunk(tune: Tune) -> None:
    tune(STREAM_CHUNK_SECONDS=0)
    updates, _ = progress_of(text("one", " two", " three"))
    assert [u["text"] for u in updates] == ["one", " two", " three"]


def test_a_chunk_comes_by_time_without_more_text(tune: Tune) -> None:
    tune(STREAM_CHUNK_SECONDS=0.01, STREAM_CHUNK_CHARS=1000)

    async def run() -> list[live.Update]:
        progress = RunProgress(InMemoryTaskStore(), "t-1", 2, _db)
        try:
            for event in text("first", " second"):
                progress.take(event)
            for _ in range(500):  # the timer's chunk, within 5 s
                if len(progress.feed.after(0)) == 2:
                    break
                await asyncio.sleep(0.01)
            return progress.feed.after(0)
        finally:
            progress.close()

    assert [u["text"] for u in asyncio.run(run())] == ["first", " second"]


def test_tool_calls_start_and_end_and_never_show_their_output(slow_chunks: None) -> None:
    events = [
        *text("Let me", " check."),
        call("c-1", "lookup", {"query": "taxi"}),
        call("c-2", "convert", {"amount": 12}),
        result("c-1", "lookup"),
        result("c-2", "convert", error=True),
        *text("Done", ": 42."),
    ]
    updates, _ = progress_of(events)
    tools = [(u["tool"], u["status"]) for u in updates if "tool" in u]
    assert tools == [
        ("lookup", "running"),
        ("convert", "running"),
        ("lookup", "ok"),
        ("convert", "error"),
    ]
    assert updates[2]["arguments"] == {"query": "taxi"}
    assert "SECRET" not in repr(updates)
    # The turn that called tools was not the answer: the next one resets it.
    assert answer_of(updates) == "Done: 42."
    assert [u["reset"] for u in updates if "text" in u] == [True, False, True, False]


def test_a_call_that_waits_for_a_person_shows_no_result(slow_chunks: None) -> None:
    events = [
        call("c-1", "file_expense", {"amount": 42}),
        {"type": "pending", "request": object()},
        result("c-1", "file_expense", error=True),  # toolnexus's placeholder
    ]
    updates, _ = progress_of(events)
    assert [u["status"] for u in updates] == ["running", "input-required"]


def test_long_arguments_are_cut() -> None:
    updates, _ = progress_of([call("c-1", "note", {"text": "x" * 1000})])
    shown = updates[0]["arguments"]
    assert isinstance(shown, str) and shown.endswith("…")
    assert len(shown) == live.ARGUMENTS_SHOWN + 1


def test_the_answer_stops_at_max_output_chars(slow_chunks: None, tune: Tune) -> None:
    tune(MAX_OUTPUT_CHARS=10)
    updates, _ = progress_of(text("abcdef", "ghijkl", "mnop"))
    assert answer_of(updates) == "abcdefghij"


class Keeping(InMemoryTaskStore):
    """A store that keeps live updates: the batches it was given."""

    keeps_live_updates = True

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[int]] = []

    def add_live_updates(self, task_id: str, seq: int, items: list[dict[str, Any]]) -> None:
        assert (task_id, seq) == ("t-1", 2)
        self.batches.append([i["n"] for i in items])


def test_a_store_that_keeps_them_gets_them_a_batch_at_a_time(slow_chunks: None) -> None:
    store = Keeping()

    async def run() -> RunProgress:
        progress = RunProgress(store, "t-1", 2, _db)
        try:
            progress.take(text("a")[0])
            for _ in range(500):  # the first write, FIRST_SAVE_AFTER later (within 5 s)
                if store.batches:
                    break
                await asyncio.sleep(0.01)
            for event in [*text("b"), call("c-1", "x", {}), result("c-1", "x")]:
                progress.take(event)
            await progress.finish()
            return progress
        finally:
            progress.close()

    progress = asyncio.run(run())
    assert progress.saved
    # Then at most every SAVE_SECONDS; the run's last ones are never written:
    # its final event says it all.
    assert store.batches == [[1]]


def test_a_run_that_ends_quickly_writes_nothing(slow_chunks: None) -> None:
    store = Keeping()

    async def run() -> RunProgress:
        progress = RunProgress(store, "t-1", 2, _db)
        try:
            for event in [*text("a", "b"), call("c-1", "x", {}), result("c-1", "x")]:
                progress.take(event)
            await progress.finish()
            return progress
        finally:
            progress.close()

    assert not asyncio.run(run()).saved
    assert store.batches == []


def test_the_feed_is_this_process_only_while_the_run_lasts(slow_chunks: None) -> None:
    async def run() -> None:
        progress = RunProgress(InMemoryTaskStore(), "t-9", 4, _db)
        assert live.runs_here("t-9")
        progress.take(text("hi")[0])
        assert live.updates_after(InMemoryTaskStore(), "t-9", 4, 0)[0]["text"] == "hi"
        assert live.updates_after(InMemoryTaskStore(), "t-9", 3, 0) == []  # another run
        progress.close()
        assert not live.runs_here("t-9")

    asyncio.run(run())
