"""The running core: runs are coroutines bounded per process by MAX_RUNS; a
run past the bound waits as submitted and starts when a slot frees (never
refused, never enqueued twice); leases are renewed in one UPDATE per beat;
the same run works from a Django Tasks worker's thread."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.conftest import wait_until
from tests.fakes import FakeLLM, Hang, Text
from toolnexus_django import lifecycle
from toolnexus_django.fulfilment import runs as runs_module
from toolnexus_django.fulfilment.jobs import schedule_fulfilment
from toolnexus_django.fulfilment.leases import worker_id
from toolnexus_django.fulfilment.recovery import recover
from toolnexus_django.fulfilment.runner import run_fulfilment
from toolnexus_django.fulfilment.runs import runs
from toolnexus_django.stores import DjangoTaskStore, get_task_store
from toolnexus_django.stores.base import state_of

pytestmark = pytest.mark.django_db(transaction=True)


def message(text: str) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }


def submitted(text: str) -> str:
    store = get_task_store()
    return str(lifecycle.submit(store, message(text), owner=None, text=text).task["id"])


def state(task_id: str) -> str:
    return state_of(get_task_store().get(task_id))


def test_a_run_past_the_bound_waits_as_submitted_and_starts_when_a_slot_frees(
    configure: Any, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    # REQUEUE_AFTER tiny: recovery would re-enqueue any submitted Task at once.
    configure(fake_llm, MAX_RUNS=1, REQUEUE_AFTER=0.01)
    fake_llm.on("first", Hang(then=Text("first done")))
    fake_llm.on("second", Text("second done"))
    enqueued: list[str] = []
    start = runs_module.Runs.start

    def counted(self: runs_module.Runs, run: Any, task_id: str, store: Any) -> Any:
        enqueued.append(task_id)
        return start(self, run, task_id, store)

    monkeypatch.setattr(runs_module.Runs, "start", counted)
    store = get_task_store()
    first = submitted("first")
    schedule_fulfilment(first, store)
    fake_llm.wait_held(1)
    second = submitted("second")
    schedule_fulfilment(second, store)
    wait_until(lambda: runs().waiting() == [second], what="the second run to wait its turn")
    assert runs().running() == [first]
    assert state(second) == "submitted"
    # Recovery, meanwhile, leaves it be: it is waiting here, not lost.
    assert recover()["requeued"] == []
    fake_llm.release()
    wait_until(lambda: state(second) == "completed", timeout=15, what="the second run")
    assert state(first) == "completed"
    assert enqueued == [first, second]  # each enqueued once, the second never refused
    assert [r.first_user_text for r in fake_llm.requests] == ["first", "second"]


def test_a_run_from_a_worker_thread_does_its_database_work_on_that_thread(
    configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.on("from a worker", Text("done on the worker's thread"))
    task_id = submitted("from a worker")
    # What a Django Tasks worker (db_worker) calls: it waits, and the run's
    # reads and writes are made on its own thread (its connection, its
    # transaction), none on the database threads.
    from toolnexus_django.runtime import dbthreads

    dbthreads.close()
    assert run_fulfilment(task_id) == "completed"
    assert dbthreads.pool.peek() is None
    task = get_task_store().get(task_id)
    assert task is not None and task["artifacts"][0]["parts"][0]["text"].startswith("done")


def test_one_update_renews_every_due_lease_and_misses_the_lost_ones() -> None:
    from toolnexus_django.models import TaskRecord
    from toolnexus_django.stores.base import revision_of

    store = DjangoTaskStore()
    ids = [submitted(f"leased {n}") for n in range(3)]
    claimed = [lifecycle.claim(store, store.get(t), worker=worker_id()) for t in ids]
    assert all(claimed)
    # Meanwhile one is canceled, and another is taken over by another worker.
    assert lifecycle.cancel(store, claimed[0].task, actor=None, via="a2a") is not None
    TaskRecord.objects.filter(id=ids[1]).update(lease_owner="elsewhere:1")
    revision = revision_of(store.get(ids[2]))
    until = timezone.now() + timedelta(seconds=90)
    assert store.renew_leases(worker_id(), ids, until) == {ids[2]}
    lease = lifecycle.read(store.get(ids[2])).lease
    assert lease is not None and lease.expires() == until
    # No move: the run's version of its Task is still the current one.
    assert revision_of(store.get(ids[2])) == revision
    assert store.renew_leases("nobody:0", ids, until) == set()
