"""Leases, recovery, cancel and conversation memory, in one process.
(Crashes of whole server processes: tests/e2e/test_crash.py.)"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang, Text, ToolCall
from tests.utils import assert_event_log, decisions_of, private_of, task_in
from toolnexus_django import lifecycle
from toolnexus_django.agent.runtime import shutdown_runtime
from toolnexus_django.fulfilment.recovery import interrupted_message, recover
from toolnexus_django.fulfilment.runs import close_runs
from toolnexus_django.models import TaskRecord
from toolnexus_django.review import NotCancelable, cancel_task
from toolnexus_django.stores import get_task_store
from toolnexus_django.stores.base import revision_of

pytestmark = pytest.mark.django_db(transaction=True)


def orphan(state: str, *, attempts: int = 1, lease_age: float = 60, text: str = "orphaned") -> dict:
    """A Task as a dead worker left it: in ``state``, its lease long expired."""
    left = task_in(state, text=text)
    past = timezone.now() - timedelta(seconds=lease_age)
    left["status"]["timestamp"] = past.isoformat().replace("+00:00", "Z")
    private = lifecycle.read(left)
    private.attempts = private.segment_attempts = attempts  # a first run: one segment
    if state == "working":
        private.lease = lifecycle.Lease("dead-host:1", past.isoformat())
    lifecycle.write(left, private)
    get_task_store().save(left)
    # The row's own clock too (the django store sweeps by updated_at).
    TaskRecord.objects.filter(pk=left["id"]).update(updated_at=past)
    return left


def test_a_dead_workers_task_runs_again(rpc: RpcClient, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm)
    fake_llm.default = Text("finished by a live worker")
    left = orphan("working", attempts=1)
    assert recover() == {"requeued": [left["id"]], "resumed": [], "failed": []}
    done = rpc.wait(left["id"])
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["text"] == "finished by a live worker"
    stored = get_task_store().get(left["id"])
    assert private_of(stored).attempts == 2
    assert private_of(stored).lease is None


def test_attempts_exhausted_ends_failed_with_the_interruption(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, MAX_ATTEMPTS=3)
    left = orphan("working", attempts=3)
    assert recover()["failed"] == [left["id"]]
    failed = rpc.get(left["id"])["result"]
    assert failed["status"]["state"] == "failed"
    assert failed["status"]["message"]["parts"][0]["text"] == interrupted_message(3)
    assert "interrupted" in interrupted_message(3)
    assert fake_llm.requests == []


def test_a_lost_enqueue_is_redone(rpc: RpcClient, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm, REQUEUE_AFTER=30)
    fake_llm.default = Text("picked up")
    lost = orphan("submitted", attempts=0, lease_age=120)
    fresh = orphan("submitted", attempts=0, lease_age=1, text="just sent")
    assert recover()["requeued"] == [lost["id"]]
    assert rpc.wait(lost["id"])["status"]["state"] == "completed"
    assert close_runs(timeout=15)
    # Enqueued twice (recovery + the original) still runs once.
    recover_again = recover()
    assert lost["id"] not in recover_again["requeued"]
    assert rpc.get(fresh["id"])["result"]["status"]["state"] == "submitted"
    assert len(fake_llm.requests) == 1


def test_waiting_tasks_hold_no_lease_and_are_left_alone(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(ToolCall("file_expense", {"amount": 1, "description": "pen"}))
    task = rpc.send("expense 1 for a pen")
    rpc.wait(task["id"])
    stored = get_task_store().get(task["id"])
    assert private_of(stored).lease is None
    later = timezone.now() + timedelta(days=30)
    assert recover(now=later) == {"requeued": [], "resumed": [], "failed": []}


def test_an_answered_task_whose_resumer_died_is_resumed_again(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    from toolnexus import Answer

    from toolnexus_django.review import answer_task

    configure(fake_llm)
    fake_llm.push(
        ToolCall("file_expense", {"amount": 3, "description": "tea"}), Text("resumed twice")
    )
    task = rpc.send("expense 3 for tea")
    rpc.wait(task["id"])
    store = get_task_store()
    request_id = private_of(store.get(task["id"])).pending["id"]
    # The answer lands while no worker runs: the resume is enqueued then lost.
    configure(fake_llm, TASK_BACKEND=None, MAX_RUNS=1)
    close_runs(timeout=15)
    from toolnexus_django.review import answering

    enqueued: list[str] = []
    original = answering.schedule_resume
    answering.schedule_resume = lambda task_id, store=None: enqueued.append(task_id)  # type: ignore[assignment]
    try:
        answer_task(task["id"], Answer(id=request_id, ok=True), decision="approve")
    finally:
        answering.schedule_resume = original
    assert enqueued == [task["id"]]
    later = timezone.now() + timedelta(minutes=5)
    assert recover(now=later)["resumed"] == [task["id"]]
    done = rpc.wait(task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "resumed twice"


def test_lease_renewal_keeps_a_long_run_alive(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, LEASE_SECONDS=0.6)
    fake_llm.push(Hang(max_seconds=30, then=Text("slow but fine")))
    task = rpc.send("take your time")
    fake_llm.wait_held(1)
    store = get_task_store()
    first = revision_of(store.get(task["id"]))
    ends: set[str] = set()

    def lease_end() -> str:
        lease = private_of(store.get(task["id"])).lease
        assert lease is not None
        return lease.until

    def renewed_three_times() -> bool:
        ends.add(lease_end())
        return len(ends) >= 4

    # Several renewals happen while the model holds its answer (the django
    # store renews every lease of the process in one UPDATE, which moves
    # nothing: the Task's revision stays the run's)...
    wait_until(renewed_three_times, timeout=10, interval=0.05, what="renewals")
    assert revision_of(store.get(task["id"])) == first
    # ...so recovery, running meanwhile, finds nothing stale.
    assert recover() == {"requeued": [], "resumed": [], "failed": []}
    fake_llm.release()
    done = rpc.wait(task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "slow but fine"
    assert private_of(store.get(task["id"])).attempts == 1


# -- cancel -----------------------------------------------------------------------


def test_cancel_stops_a_running_run_and_it_never_completes(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    from toolnexus_django.signals import run_finished

    configure(fake_llm)
    fake_llm.push(Hang(max_seconds=30, then=Text("too late")))
    task = rpc.send("long job")
    fake_llm.wait_held(1)
    finished: list[str] = []
    run_finished.connect(lambda sender, **kw: finished.append(kw["state"]), weak=False)
    canceled = cancel_task(task["id"], actor="ops")
    assert canceled["status"]["state"] == "canceled"
    # The run stops at once (its cancel token), before the model answers.
    assert close_runs(timeout=15)
    fake_llm.release()
    assert rpc.get(task["id"])["result"]["status"]["state"] == "canceled"
    assert finished == []
    audit = decisions_of(task["id"])
    assert (audit[-1]["decision"], audit[-1]["actor"], audit[-1]["from"]) == (
        "cancel",
        "ops",
        "working",
    )
    # The run's outcome was dropped: no event after the cancel.
    kinds = [e["kind"] for e in assert_event_log(task["id"])]
    assert kinds == ["submit", "claim", "cancel"]
    run_finished.receivers.clear()


def test_cancel_a_waiting_task_and_a_finished_one(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.on("waits", ToolCall("file_expense", {"amount": 2, "description": "map"}), Text("no"))
    fake_llm.on("done", Text("finished"))
    waiting = rpc.wait(rpc.send("waits")["id"])
    done = rpc.wait(rpc.send("done")["id"])

    assert cancel_task(waiting["id"])["status"]["state"] == "canceled"
    assert close_runs(timeout=15)
    assert len(fake_llm.requests_for("waits")) == 1, "a canceled wait never resumes"
    with pytest.raises(NotCancelable):
        cancel_task(done["id"])
    with pytest.raises(NotCancelable):
        cancel_task(waiting["id"])
    assert rpc.get(done["id"])["result"]["status"]["state"] == "completed"


# -- conversations ---------------------------------------------------------------


def test_a_conversation_remembers_earlier_turns_across_a_restart(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(Text("Nice to meet you, Ada."), Text("Your name is Ada."))
    first = rpc.send("My name is Ada.", contextId="ctx-ada")
    assert first["contextId"] == "ctx-ada"
    rpc.wait(first["id"])
    assert close_runs(timeout=15)
    shutdown_runtime()  # a restart: nothing of the first run is in memory any more

    second = rpc.send("What is my name?", contextId="ctx-ada")
    assert rpc.wait(second["id"])["artifacts"][0]["parts"][0]["text"] == "Your name is Ada."
    sent = fake_llm.requests[1].body["messages"]
    contents = [(m["role"], m.get("content")) for m in sent if m["role"] != "system"]
    assert contents == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ]
    # A message without a contextId starts afresh.
    other = rpc.send("Who am I?")
    rpc.wait(other["id"])
    assert [m["role"] for m in fake_llm.requests[2].body["messages"] if m["role"] != "system"] == [
        "user"
    ]


def test_a_stopping_worker_releases_its_runs_for_others(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    from toolnexus_django.fulfilment.leases import release_runs

    configure(fake_llm, REQUEUE_AFTER=0.01)
    fake_llm.push(Hang(max_seconds=30), Text("done by the next worker"))
    task = rpc.send("a long one")
    fake_llm.wait_held(1)
    assert release_runs() == [task["id"]]
    released = get_task_store().get(task["id"])
    assert released["status"]["state"] == "submitted"
    assert private_of(released).attempts == 0  # a release is not an interruption
    assert close_runs(timeout=15)  # the run itself stopped
    fake_llm.release()
    assert rpc.get(task["id"])["result"]["status"]["state"] == "submitted"
    # Once REQUEUE_AFTER has passed on the row's own clock, recovery takes it.
    wait_until(lambda: recover()["requeued"] == [task["id"]], timeout=10, what="the requeue")
    done = rpc.wait(task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "done by the next worker"


@pytest.mark.slow
def test_a_conversation_continues_in_another_process(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, tmp_path: Any
) -> None:
    """The first turn runs here; the second in a toolnexus_serve process on the
    same database: it starts from the first turn's messages."""
    from tests.conftest import RpcClient as Client
    from tests.servers import fake_env, serve

    configure(fake_llm)
    fake_llm.push(Text("Noted: the project is Apollo."), Text("It is Apollo."))
    first = rpc.send("Our project is called Apollo.", contextId="ctx-apollo")
    rpc.wait(first["id"])
    assert close_runs(timeout=15)

    with serve(tmp_path, env=fake_env(fake_llm)) as server:
        server.wait_ready()
        other = Client(f"{server.base}/agent/")
        second = other.send("What is the project called?", contextId="ctx-apollo")
        done = other.wait(second["id"], timeout=30)
    assert done["artifacts"][0]["parts"][0]["text"] == "It is Apollo."
    sent = [(m["role"], m.get("content")) for m in fake_llm.requests[1].body["messages"]]
    assert [m for m in sent if m[0] != "system"] == [
        ("user", "Our project is called Apollo."),
        ("assistant", "Noted: the project is Apollo."),
        ("user", "What is the project called?"),
    ]


def test_a_task_waiting_its_turn_here_is_neither_read_nor_enqueued_again(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    """Past REQUEUE_AFTER a Task waiting for a MAX_RUNS slot looks like a lost
    enqueue to the store; the sweep asks this process first, and does not even
    read it (with thousands waiting, those reads were an idle worker's CPU)."""
    from tests.counting import CountingStore

    configure(fake_llm, MAX_RUNS=1, REQUEUE_AFTER=30)
    fake_llm.default = Hang(max_seconds=20, then=Text("done"))
    running = rpc.send("the first takes the only slot")
    waiting = rpc.send("the second waits its turn")
    wait_until(lambda: len(fake_llm.requests) == 1, timeout=10)
    assert rpc.get(waiting["id"])["result"]["status"]["state"] == "submitted"
    store = CountingStore()
    later = timezone.now() + timedelta(seconds=120)
    assert recover(store, now=later) == {"requeued": [], "resumed": [], "failed": []}
    assert store.gets == 0  # neither Task was read: both are this process's
    assert running["id"] != waiting["id"]
