"""One start() / stop(grace) for what runs per process (toolnexus_django.runtime):
start() brings the pieces up, stop() brings every one down in order within
the grace (TOOLNEXUS["GRACE_SECONDS"]) and says whether all stopped in time,
and an ASGI server's lifespan drives both."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang
from tests.utils import private_of
from toolnexus_django import runtime
from toolnexus_django.a2a import follow
from toolnexus_django.agent.runtime import get_runtime
from toolnexus_django.fulfilment import runs as runs_module
from toolnexus_django.fulfilment.sweep import sweeper
from toolnexus_django.runtime import dbthreads
from toolnexus_django.runtime.registry import PerProcess, Stage
from toolnexus_django.stores import get_task_store

#: Threads of the pieces (each pool names its threads "<name>-<n>").
PIECE_THREADS = (
    "toolnexus-sweep",
    "toolnexus-leases",
    "toolnexus-push",
    "toolnexus-runtime",
    "toolnexus-io",
    "toolnexus-tool",
    "toolnexus-db",
)


def piece_threads(ignoring: frozenset[threading.Thread] = frozenset()) -> list[str]:
    return sorted(
        t.name
        for t in threading.enumerate()
        if t.is_alive() and t.name.startswith(PIECE_THREADS) and t not in ignoring
    )


def singletons() -> list[PerProcess[Any]]:
    return [piece for piece in runtime.pieces() if isinstance(piece, PerProcess)]


@pytest.fixture(autouse=True)
def _runtime_stopped() -> Iterator[None]:
    """Each test ends with the runtime stopped and waits allowed again (a
    stop ends this process's waits: the next test's blocking sends wait)."""
    yield
    runtime.stop(grace=5)
    follow.resume_waiting()


def test_every_piece_is_registered_once_in_stop_order() -> None:
    assert [(piece.stage, piece.name) for piece in runtime.pieces()] == [
        (Stage.WAITS, "blocking waits"),
        (Stage.SWEEP, "sweep"),
        (Stage.RUNS, "in-process runs"),
        (Stage.LEASES, "lease keeper"),
        (Stage.PUSH, "push pool"),
        (Stage.LOOP, "agent runtime"),
        (Stage.TOOLS, "tool threads"),
        (Stage.DATABASE, "wake-up listener"),
        (Stage.DATABASE, "database threads"),
    ]


@pytest.mark.django_db(transaction=True)
def test_start_brings_the_pieces_up_and_stop_brings_every_one_down(settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "EXPIRY_SWEEP_INTERVAL": 0.05}
    runtime.stop(grace=5)  # from a clean slate, whatever ran before
    assert all(piece.peek() is None for piece in singletons())
    # Pools an earlier test built for itself (not the runtime's) may still be winding down.
    earlier = frozenset(threading.enumerate())

    runtime.start()
    runtime.start()  # idempotent: one sweep, one set of database threads
    housekeeper, pool = sweeper.peek(), dbthreads.pool.peek()
    assert housekeeper is not None and pool is not None
    sweeps = [name for name in piece_threads(earlier) if name == "toolnexus-sweep"]
    assert sweeps == ["toolnexus-sweep"]
    assert sweeper.peek() is housekeeper and dbthreads.pool.peek() is pool

    # The rest start on first use, as they do without start(): use each once.
    for piece in singletons():
        piece.get()
    get_runtime().run_coroutine(asyncio.to_thread(int)).result(10)  # the loop and its IO pool
    from toolnexus_django.push import delivery
    from toolnexus_django.tools import budget

    delivery._pool.get().submit(int).result(10)
    budget.pool.get().submit(int).result(10)
    asyncio.run(dbthreads.run_sync(int))
    up = {name.rsplit("-", 1)[0] if name[-1].isdigit() else name for name in piece_threads(earlier)}
    assert {"toolnexus-sweep", "toolnexus-runtime", "toolnexus-io"} <= up
    assert {"toolnexus-push", "toolnexus-tool", "toolnexus-db"} <= up

    assert runtime.stop(grace=5) is True
    assert [piece.name for piece in singletons() if piece.peek() is not None] == []
    try:
        wait_until(lambda: piece_threads(earlier) == [], timeout=5, what="the threads to end")
    except AssertionError as error:
        raise AssertionError(f"{error}; still alive: {piece_threads(earlier)}") from None


@pytest.mark.django_db(transaction=True)
def test_stop_gives_runs_the_grace_setting_and_reports_one_still_going(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "GRACE_SECONDS": 0.2}
    given: list[float | None] = []
    close = runs_module.Runs.close

    def spy(self: runs_module.Runs, timeout: float | None = 0) -> bool:
        given.append(timeout)
        return close(self, timeout)

    monkeypatch.setattr(runs_module.Runs, "close", spy)
    release = threading.Event()
    started = threading.Event()

    async def still_going(task_id: str, store: Any, run_sync: Any) -> str:
        started.set()
        deadline = time.monotonic() + 30
        while not release.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return "done"

    runs_module.runs().start(still_going, "t-long", get_task_store())
    assert started.wait(10)

    assert runtime.stop() is False  # the run did not finish within the grace
    release.set()
    assert given and given[0] is not None and 0 < given[0] <= 0.2  # the setting, not 10
    assert [piece.name for piece in singletons() if piece.peek() is not None] == []


def test_the_grace_is_one_setting(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert runtime.grace_seconds() == 10.0  # the default
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "GRACE_SECONDS": 3}
    assert runtime.grace_seconds() == 3.0
    monkeypatch.setenv("TOOLNEXUS_GRACE", "7")
    assert runtime.grace_seconds() == 3.0  # the setting wins over the old variable
    settings.TOOLNEXUS = {k: v for k, v in settings.TOOLNEXUS.items() if k != "GRACE_SECONDS"}
    with pytest.warns(DeprecationWarning, match="GRACE_SECONDS"):
        assert runtime.grace_seconds() == 7.0  # still read, for one release


@pytest.mark.parametrize("value", ["ten", "-1", "nan"])
def test_a_bad_old_grace_variable_is_ignored_with_a_warning_not_a_crash(
    value: str, settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # grace_seconds() is read while the server stops: raising there loses the graceful stop.
    settings.TOOLNEXUS = {k: v for k, v in settings.TOOLNEXUS.items() if k != "GRACE_SECONDS"}
    monkeypatch.setenv("TOOLNEXUS_GRACE", value)
    with pytest.warns(DeprecationWarning), caplog.at_level("WARNING", "toolnexus_django.runtime"):
        assert runtime.grace_seconds() == 10.0  # the setting's default applies
    assert "TOOLNEXUS_GRACE" in caplog.text and "ignored" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_an_announced_stop_holds_back_a_start_until_it_is_carried_out() -> None:
    runtime.stop_by(time.monotonic())  # a quick stop signal, while booting
    runtime.start()
    assert sweeper.peek() is None  # a stopping process starts nothing
    assert runtime.stop() is True
    runtime.start()  # the stop was carried out: a new start starts
    assert sweeper.peek() is not None


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_asgi_lifespan_starts_and_stops_the_runtime(configure: Any, fake_llm: FakeLLM) -> None:
    from tests.asgiserver import AsgiServer

    configure(fake_llm, GRACE_SECONDS=0.5, REQUEUE_AFTER=3600)
    runtime.stop(grace=5)
    assert sweeper.peek() is None and dbthreads.pool.peek() is None
    fake_llm.push(Hang(max_seconds=30))
    with AsgiServer(lifespan="on") as server:
        assert sweeper.peek() is not None and dbthreads.pool.peek() is not None  # startup
        task = RpcClient(f"{server.url}/agent/").send("longer than the grace")
        fake_llm.wait_held(1)
    # shutdown: the run outlived GRACE_SECONDS, so it was handed back.
    fake_llm.release()
    assert [piece.name for piece in singletons() if piece.peek() is not None] == []
    released = get_task_store().get(task["id"])
    assert released is not None and released["status"]["state"] == "submitted"
    assert private_of(released).attempts == 0  # a release is not an interruption
