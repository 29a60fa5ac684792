"""Guarded transitions: compare-and-set on every store; terminal is final."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import taskdicts
from toolnexus_django.stores import (
    DjangoTaskStore,
    FileTaskStore,
    InMemoryTaskStore,
    TaskStore,
)
from toolnexus_django.stores.base import TerminalTaskError, revision_of


class DictStore(TaskStore):
    """A custom store with only get and save: it gets the default transition."""

    def __init__(self) -> None:
        self.tasks: dict[str, Any] = {}

    def get(self, id: str) -> dict[str, Any] | None:
        task = self.tasks.get(id)
        return None if task is None else {**task}

    def save(self, task: dict[str, Any]) -> None:
        self.tasks[task["id"]] = {**task}


STORES: dict[str, Callable[[Path], TaskStore]] = {
    "memory": lambda _: InMemoryTaskStore(),
    "file": lambda tmp: FileTaskStore(tmp),
    "django": lambda _: DjangoTaskStore(),
    "custom": lambda _: DictStore(),
}


# Transactional: the racing threads use connections of their own.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=list(STORES))
def store(request: Any, tmp_path: Path) -> TaskStore:
    return STORES[request.param](tmp_path)


def submitted() -> dict[str, Any]:
    message = {"role": "user", "parts": [{"kind": "text", "text": "hi"}]}
    return taskdicts.new_task(message, text="hi", owner=None)


def test_compare_and_set_moves_only_from_the_expected_version(store: TaskStore) -> None:
    task = submitted()
    store.save(task)
    working = taskdicts.with_status(task, "working")
    assert store.compare_and_set(task, working) is True
    assert revision_of(store.get(task["id"])) == 1
    # The old version is gone: a second move from it loses and changes nothing.
    stale = taskdicts.with_status(task, "failed", "stale")
    assert store.compare_and_set(task, stale) is False
    assert taskdicts.state_of(store.get(task["id"])) == "working"


def test_same_state_different_revision_loses(store: TaskStore) -> None:
    """A -> B -> A again: a writer still holding the first A must lose (no ABA)."""
    task = submitted()
    store.save(task)
    first = taskdicts.with_status(task, "input-required", "first question")
    assert store.compare_and_set(task, first)
    back_to_work = taskdicts.with_status(first, "working")
    assert store.compare_and_set(first, back_to_work)
    second = taskdicts.with_status(back_to_work, "input-required", "second question")
    assert store.compare_and_set(back_to_work, second)
    answer_to_first = taskdicts.with_status(first, "working")
    assert store.compare_and_set(first, answer_to_first) is False
    stored = store.get(task["id"])
    assert stored["status"]["message"]["parts"][0]["text"] == "second question"


@pytest.mark.parametrize("end", ["completed", "failed", "canceled", "rejected"])
def test_a_terminal_task_never_changes(store: TaskStore, end: str) -> None:
    task = submitted()
    store.save(task)
    final = taskdicts.with_status(task, end)
    assert store.compare_and_set(task, final)
    assert store.compare_and_set(final, taskdicts.with_status(final, "working")) is False
    if not isinstance(store, DictStore):  # a custom store's own save is its business
        with pytest.raises(TerminalTaskError):
            store.save(taskdicts.with_status(final, "working"))
    assert taskdicts.state_of(store.get(task["id"])) == end


def test_the_seed_plain_save_keeps_working(store: TaskStore) -> None:
    store.save({"id": "t1", "status": {"state": "working"}})
    store.save({"id": "t1", "status": {"state": "completed"}})
    assert store.get("t1")["status"]["state"] == "completed"


def test_racing_threads_exactly_one_wins(store: TaskStore) -> None:
    task = taskdicts.with_status(submitted(), "input-required", "approve?")
    store.save(task)
    racers = 8
    barrier = threading.Barrier(racers)
    wins: list[int] = []
    errors: list[BaseException] = []

    def race(n: int) -> None:
        try:
            expected = store.get(task["id"])
            assert expected is not None
            barrier.wait(timeout=10)
            new = taskdicts.with_status(expected, "working")
            new["_private"]["winner"] = n
            if store.compare_and_set(expected, new):
                wins.append(n)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            from django.db import connection

            connection.close()

    threads = [threading.Thread(target=race, args=(n,)) for n in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert len(wins) == 1, wins
    stored = store.get(task["id"])
    assert stored["_private"]["winner"] == wins[0]
    assert revision_of(stored) == 1


def test_cancel_racing_completion_ends_in_one_terminal_state(store: TaskStore) -> None:
    task = taskdicts.with_status(submitted(), "working")
    store.save(task)
    outcomes: dict[str, bool] = {}
    barrier = threading.Barrier(2)

    def finish(name: str, new_task: dict[str, Any]) -> None:
        barrier.wait(timeout=10)
        outcomes[name] = store.compare_and_set(task, new_task)
        from django.db import connection

        connection.close()

    done = taskdicts.completed(task, "answer")
    canceled = taskdicts.with_status(task, "canceled")
    threads = [
        threading.Thread(target=finish, args=("completed", done)),
        threading.Thread(target=finish, args=("canceled", canceled)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(outcomes.values()) == [False, True]
    winner = next(name for name, won in outcomes.items() if won)
    assert taskdicts.state_of(store.get(task["id"])) == winner


def test_a_lost_compare_and_set_writes_no_event(configure: Any) -> None:
    """Two movers from the same version on the database: one wins, with its
    event; the loser's event is never written."""
    from tests.utils import assert_event_log, task_in
    from toolnexus_django import lifecycle
    from toolnexus_django.stores import DjangoTaskStore

    configure(None, store="django")
    store = DjangoTaskStore()
    task = task_in("submitted", store=store)
    won = lifecycle.claim(store, task, worker="a:1")
    lost = lifecycle.claim(store, task, worker="b:2")
    assert won is not None and lost is None
    events = assert_event_log(task["id"], store)
    assert [(e["kind"], e["actor"]) for e in events] == [("submit", ""), ("claim", "a:1")]
