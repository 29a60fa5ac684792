"""Wake-ups by LISTEN/NOTIFY (toolnexus_django/lifecycle/listener.py), on the
test database: with both polls 30 s away, only a notification can wake a
watch within the tests' deadlines.

"Elsewhere" is a move as another process makes it: on a connection of its
own, its local wake-ups going to a hub nobody watches, so only its NOTIFY
(migration 0012's trigger, at commit) reaches this process's hub. The
listener is this process's real one, started by the real poller. PostgreSQL
only: the other databases keep today's poller (one test here says so)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Any

import psycopg
import pytest
from django.db import connection, connections

from tests.conftest import wait_until
from toolnexus_django import lifecycle
from toolnexus_django.lifecycle import listener, wakeups
from toolnexus_django.stores import DjangoTaskStore, InMemoryTaskStore, TaskStore
from toolnexus_django.stores.base import Task, state_of

pytestmark = pytest.mark.django_db(transaction=True)

#: Longer than any test here lasts: a wake-up within a deadline is not a poll's.
POLL = 30.0
#: How long a wake-up may take here (a reconnection's backoff included).
DEADLINE = 15.0


class Elsewhere(wakeups.Hub):
    """Another process's hub: nobody watches it, and it never polls."""

    def _start_poller(self) -> None:
        pass


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(f"LISTEN/NOTIFY is PostgreSQL's; this database is {connection.vendor}")


@pytest.fixture
def beats(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str | None]]:
    """The django store, both polls 30 s apart; each beat of this process's
    poller recorded as the database its listener heard as it began (None: it
    was not healthy). At the end, the poller and its listener stopped."""
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "STORE": "django",
        "EVENT_POLL_INTERVAL": POLL,
        "EVENT_FALLBACK_POLL_INTERVAL": POLL,
    }
    hub = wakeups.hub()
    recorded: list[str | None] = []
    real = hub.beat

    def beat() -> bool:  # recorded as it ends: what it found is in hand by then
        heard = listener.heard_alias()
        try:
            return real()
        finally:
            recorded.append(heard)

    monkeypatch.setattr(hub, "beat", beat)
    yield recorded
    hub.kick()  # nothing watches: the poller's next beat ends it, and it stops the listener
    wait_until(lambda: hub._poller is None and listener.active() is None, what="the poller")


def submitted(store: TaskStore) -> Task:
    text = "file my claim"
    message = {"messageId": str(uuid.uuid4()), "role": "user", "parts": [{"kind": "text"}]}
    message["parts"][0]["text"] = text
    return lifecycle.submit(store, message, owner=None, text=text).task


def elsewhere(
    monkeypatch: pytest.MonkeyPatch, move: Callable[..., Any], *args: Any, **kwargs: Any
) -> Any:
    """``move(store, *args, **kwargs)`` as another process makes it, on a
    thread with its own connection."""

    def run() -> Any:
        try:
            return move(DjangoTaskStore(), *args, **kwargs)
        finally:
            connections.close_all()

    with monkeypatch.context() as there, ThreadPoolExecutor(1) as pool:
        there.setattr(wakeups, "hub", Elsewhere)
        return pool.submit(run).result(timeout=30)


def heard_after_catching_up(beats: list[str | None]) -> bool:
    """The listener is healthy and the poller made its catch-up beat since:
    the next beat is 30 s away."""
    return listener.heard_alias() == "default" and "default" in beats


def listening_sessions() -> list[int]:
    """The backend pids of the listeners on this run's test database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity "
            "WHERE application_name = %s AND datname = current_database()",
            [listener.APPLICATION_NAME],
        )
        return [pid for (pid,) in cursor.fetchall()]


@contextmanager
def refusing_connections() -> Iterator[None]:
    """This run's test database refuses new connections for the block (the
    connections it has stay: the test's own makes the moves)."""
    s = connection.settings_dict
    name = connection.ops.quote_name(s["NAME"])
    params = {"host": s["HOST"] or None, "port": s["PORT"] or None, "user": s["USER"] or None}
    connection.ensure_connection()  # the test's own, kept through
    with psycopg.connect(dbname="postgres", password=s["PASSWORD"] or None, **params) as admin:
        admin.autocommit = True
        admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        try:
            yield
        finally:
            admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")


def test_a_move_elsewhere_wakes_a_watch_here_by_its_notification(
    postgresql: None, beats: list[str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = DjangoTaskStore()
    task = submitted(store)
    with wakeups.watch(store, task["id"]) as watch:
        wait_until(lambda: heard_after_catching_up(beats), timeout=DEADLINE, what="the listener")
        assert not watch.wait(0)
        claimed = elsewhere(monkeypatch, lifecycle.claim, task, worker="w-elsewhere")
        assert claimed is not None
        assert watch.wait(DEADLINE), "no wake-up: the next poll is 30 s away"
        assert watch.news(task) is None  # moved elsewhere: read the store
    assert state_of(store.get(task["id"])) == "working"


def test_moves_made_while_the_listener_is_down_arrive_when_it_is_back(
    postgresql: None,
    beats: list[str | None],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolnexus_django.lifecycle")
    store = DjangoTaskStore()
    tasks = [submitted(store) for _ in range(3)]
    with ExitStack() as stack:
        watches = [stack.enter_context(wakeups.watch(store, t["id"])) for t in tasks]
        # Connected, and its catch-up beat done: no beat of the poller is due
        # but the one the loss will ask for (else it could find the moves below).
        wait_until(lambda: heard_after_catching_up(beats), timeout=DEADLINE, what="the listener")
        [pid] = wait_until(lambda: len(listening_sessions()) == 1 and listening_sessions())
        with refusing_connections():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            # Lost: the poller beats once at once, then not for 30 s.
            wait_until(lambda: listener.heard_alias() is None, what="the lost connection")
            wait_until(lambda: None in beats, what="the poller's beat when it was lost")
            with monkeypatch.context() as there:  # moves made here, told to nobody here
                there.setattr(wakeups, "hub", Elsewhere)
                moved = [lifecycle.claim(store, t, worker="w-elsewhere") for t in tasks]
            assert all(m is not None for m in moved)
            assert [w.wait(0) for w in watches] == [False, False, False]
        # Connections allowed again: it reconnects, LISTENs, probes, and its
        # catch-up beat finds the three moves in the event log.
        for watch, task in zip(watches, tasks, strict=True):
            assert watch.wait(DEADLINE), "a move made while the listener was down was missed"
            assert watch.news(task) is None
        assert listener.heard_alias() == "default"
    assert [state_of(store.get(t["id"])) for t in tasks] == ["working"] * 3
    said = [r.getMessage() for r in caplog.records if r.name == "toolnexus_django.lifecycle"]
    lost = [m for m in said if "listener lost its connection" in m]
    assert len(lost) == 1 and "database unavailable (OperationalError: " in lost[0], said
    assert [m for m in said if m.startswith("listening again")] != []
    assert not [r for r in caplog.records if r.exc_info], "an outage is one line, no traceback"


def test_one_listening_connection_per_process_however_many_watch(
    postgresql: None, beats: list[str | None]
) -> None:
    store = DjangoTaskStore()
    tasks = [submitted(store) for _ in range(200)]
    hub = wakeups.hub()
    with ExitStack() as stack:
        stack.enter_context(wakeups.watch(store, tasks[0]["id"]))
        wait_until(lambda: heard_after_catching_up(beats), timeout=DEADLINE, what="the listener")
        wait_until(lambda: len(listening_sessions()) == 1, what="one listening session")
        for task in tasks[1:]:
            stack.enter_context(wakeups.watch(store, task["id"]))
        assert hub.watching == 200
        heard = len(beats)
        hub.kick()  # a beat, and the poller's look at its listener, with 200 watches
        wait_until(lambda: len(beats) > heard, what="a beat")
        assert len(listening_sessions()) == 1


def test_other_stores_keep_polling(beats: list[str | None], settings: Any) -> None:
    """A memory store (and, on SQLite, the django store) starts no listener:
    its watches are woken by the poll."""
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "EVENT_POLL_INTERVAL": 0.05}
    stores: list[TaskStore] = [InMemoryTaskStore()]
    if connection.vendor != "postgresql":
        stores.append(DjangoTaskStore())
    for store in stores:
        task = submitted(store)
        with wakeups.watch(store, task["id"]):
            heard = len(beats)
            wait_until(lambda: len(beats) > heard + 1, what="two beats")  # noqa: B023
            assert listener.active() is None
