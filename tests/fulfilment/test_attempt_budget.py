"""The attempt budget (MAX_ATTEMPTS) is per run segment.

A Task's run is cut into segments by the people it waits for: the first run,
then one resume per answer. Each segment has the whole budget; only attempts
of the segment under way that were interrupted (a worker died holding the
lease) count, and the give-up message says how many there were. A person's
approval is never lost to one crash just because earlier rounds used runs.

The lifecycle is driven by its own verbs on an in-memory store (no server);
recovery's decision is checked on the configured store with :func:`recover`.
(The same Task killed for real, kill -9 of ``toolnexus_serve``:
tests/e2e/test_crash_after_review.py.)
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from toolnexus import Answer

from tests.conftest import wait_until
from tests.fakes import FakeLLM, Text
from tests.utils import approval, halted_transcript, private_of, task_in
from toolnexus_django import lifecycle, review
from toolnexus_django.fulfilment.recovery import recover
from toolnexus_django.lifecycle import Verdict, states
from toolnexus_django.lifecycle.moves import Moved
from toolnexus_django.stores import InMemoryTaskStore, TaskStore, get_task_store
from toolnexus_django.stores.base import PRIVATE_KEY, Task, state_of

MAX = 3


def moved(result: Moved | None) -> Task:
    assert result is not None, "the move lost a race nobody else runs"
    return result.task


def answered_round(store: TaskStore, task: Task, n: int) -> Task:
    """The running ``task`` stops on approval ``n``; a reviewer approves it."""
    waiting = moved(
        lifecycle.suspend(
            store, task, approval(f"approve-{n}"), transcript=halted_transcript(), style="openai"
        )
    )
    given = Answer(id=f"approve-{n}", ok=True)
    return review.answer(store, waiting, Verdict(given, decision="approve")).task


def two_rounds_then_resuming(store: TaskStore, task: Task, worker: str = "w:1") -> Task:
    """A claimed Task through two answered rounds, resuming the second answer."""
    for n in (1, 2):
        task = answered_round(store, task, n)
        task = moved(lifecycle.start_resume(store, task, worker=worker))
    return task


def submitted(store: TaskStore) -> Task:
    message = {"role": "user", "parts": [{"kind": "text", "text": "file two expenses"}]}
    return lifecycle.submit(store, message, owner=None, text="file two expenses").task


def status_text(task: Task) -> str:
    return "".join(p.get("text", "") for p in task["status"]["message"]["parts"])


@pytest.fixture
def budget(settings: Any) -> int:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "MAX_ATTEMPTS": MAX}
    return MAX


def test_two_answered_rounds_leave_the_whole_budget_to_the_resume(budget: int) -> None:
    store = InMemoryTaskStore()
    task = moved(lifecycle.claim(store, submitted(store), worker="w:1"))
    task = two_rounds_then_resuming(store, task)
    private = lifecycle.read(task)
    assert (private.attempts, private.segment_attempts) == (3, 1)
    assert not lifecycle.out_of_attempts(task), "the first crash of this resume is not fatal"

    # Its worker dies budget - 1 times: each time it runs again.
    for attempt in range(1, budget):
        assert not lifecycle.out_of_attempts(task)
        task = moved(lifecycle.requeue(store, task))
        assert lifecycle.phase_of(task) == states.ANSWERED, "the answer waits for the next try"
        task = moved(lifecycle.start_resume(store, task, worker=f"w:{attempt + 1}"))
    # The budget-th interruption of the same segment is the last.
    assert lifecycle.read(task).segment_attempts == budget
    assert lifecycle.out_of_attempts(task)
    failed = moved(lifecycle.give_up(store, task))

    assert state_of(failed) == states.FAILED
    assert status_text(failed) == lifecycle.interrupted_message(budget)
    assert f"({budget} times)" in status_text(failed), "the count of interrupted attempts"
    events = store.events(failed["id"])
    assert [e["kind"] for e in events] == [
        "submit", "claim",
        "suspend", "answer", "resume",
        "suspend", "answer", "resume",
        "requeue", "resume", "requeue", "resume", "give_up",
    ]  # fmt: skip
    # Each start says its attempt in all and in its segment.
    assert [e["private"] for e in events if e["kind"] in ("claim", "resume")] == [
        {"attempt": 1, "segment_attempt": 1},
        {"attempt": 2, "segment_attempt": 1},
        {"attempt": 3, "segment_attempt": 1},
        {"attempt": 4, "segment_attempt": 2},
        {"attempt": 5, "segment_attempt": 3},
    ]


def test_one_interruption_is_given_up_as_once_when_the_budget_is_one(settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "MAX_ATTEMPTS": 1}
    store = InMemoryTaskStore()
    task = moved(lifecycle.claim(store, submitted(store), worker="w:1"))
    task = two_rounds_then_resuming(store, task)
    failed = moved(lifecycle.give_up(store, task))
    assert status_text(failed) == lifecycle.interrupted_message(1)
    assert "(once)" in status_text(failed)  # not "(3 times)": two runs ended cleanly
    assert lifecycle.out_of_attempts(task)


def test_the_first_segment_counts_interrupted_claims(budget: int) -> None:
    store = InMemoryTaskStore()
    task = submitted(store)
    for attempt in range(1, budget + 1):
        task = moved(lifecycle.claim(store, task, worker=f"w:{attempt}"))
        assert lifecycle.read(task).segment_attempts == attempt
        if attempt < budget:
            assert not lifecycle.out_of_attempts(task)
            task = moved(lifecycle.requeue(store, task))
    assert lifecycle.out_of_attempts(task)
    assert status_text(moved(lifecycle.give_up(store, task))) == lifecycle.interrupted_message(
        budget
    )


def test_a_suspension_ends_the_segment_even_after_interruptions(budget: int) -> None:
    store = InMemoryTaskStore()
    task = moved(lifecycle.claim(store, submitted(store), worker="w:1"))
    task = moved(lifecycle.requeue(store, task))
    task = moved(lifecycle.claim(store, task, worker="w:2"))
    assert lifecycle.read(task).segment_attempts == 2
    task = answered_round(store, task, 1)
    assert lifecycle.read(task).segment_attempts == 0
    task = moved(lifecycle.start_resume(store, task, worker="w:3"))
    assert (lifecycle.read(task).attempts, lifecycle.read(task).segment_attempts) == (3, 1)


def test_a_released_resume_is_refunded_in_its_segment(budget: int) -> None:
    store = InMemoryTaskStore()
    task = moved(lifecycle.claim(store, submitted(store), worker="w:1"))
    task = two_rounds_then_resuming(store, task)
    for _ in range(budget + 2):  # stopping workers give it back: never a give-up
        task = moved(lifecycle.release(store, task))
        task = moved(lifecycle.start_resume(store, task, worker="w:2"))
        assert not lifecycle.out_of_attempts(task)
    assert (lifecycle.read(task).attempts, lifecycle.read(task).segment_attempts) == (3, 1)


@pytest.mark.parametrize(
    ("phase_of_old", "attempts", "segment"),
    [
        ("running", 2, 2),  # a first run: every attempt was this segment's
        ("queued", 2, 2),
        ("resuming", 5, 1),  # a resume: only the try under way is known
        ("answered", 5, 0),
        ("waiting", 5, 0),
    ],
)
def test_a_task_stored_before_segments_reads_a_safe_count(
    phase_of_old: str, attempts: int, segment: int
) -> None:
    """Older Tasks have only ``attempts``: a first run keeps its count; a
    resumed run counts from the attempt under way (never its earlier rounds)."""
    old: Task = {
        "id": "t-old",
        "status": {"state": "working"},
        PRIVATE_KEY: {"v": 1, "phase": phase_of_old, "attempts": attempts},
    }
    private = lifecycle.read(old)
    assert (private.attempts, private.segment_attempts) == (attempts, segment)
    lifecycle.write(old, private)
    assert old[PRIVATE_KEY]["segment_attempts"] == segment
    assert lifecycle.read(old).segment_attempts == segment


# -- recovery's decision, on the configured store -------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_recovery_resumes_a_two_round_task_whose_resume_died_once(
    configure: Any, fake_llm: FakeLLM, budget: int
) -> None:
    configure(fake_llm, MAX_ATTEMPTS=budget)
    fake_llm.default = Text("filed after the crash")
    store = get_task_store()
    task = two_rounds_then_resuming(store, task_in("working", store=store), worker="dead:1")
    # The resumer died: its lease lapsed long ago.
    private = lifecycle.read(task)
    private.lease = lifecycle.Lease("dead:1", (timezone.now() - timedelta(minutes=5)).isoformat())
    lapsed = dict(task)
    lifecycle.write(lapsed, private)
    assert store.compare_and_set(task, lapsed)

    assert recover(now=timezone.now() + timedelta(minutes=5)) == {
        "requeued": [],
        "resumed": [task["id"]],
        "failed": [],
    }
    done = wait_until(
        lambda: (t := store.get(task["id"])) and state_of(t) in states.TERMINAL and t,
        timeout=15,
        what="the resumed run to end",
    )
    assert state_of(done) == states.COMPLETED, done["status"]
    assert done["artifacts"][0]["parts"][0]["text"] == "filed after the crash"
    assert (private_of(done).attempts, private_of(done).segment_attempts) == (4, 0)
