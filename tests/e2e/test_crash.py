"""Crashes of real server processes: kill -9, a PostgreSQL restart, SIGTERM.

Every test here runs ``manage.py toolnexus_serve`` as a subprocess (through the
``serve`` helper of tests/servers.py, which starts it in its own
session -- so its process group is the gunicorn master plus its workers --,
logs it to a file printed on failure, and SIGKILLs the group no matter what)
against the fake model over real HTTP, and waits on conditions with deadlines.

Recovery timing is shortened through the testproject's environment knobs: a
2 s lease and a sweep every 0.5 s, so a dead worker's Task is running again
within a few seconds of a new server starting.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests import pgcluster
from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang, Text
from tests.servers import Served, fake_env, group_members, kill_group, migrate, serve
from tests.utils import assert_event_log, private_of
from toolnexus_django.fulfilment.recovery import interrupted_message
from toolnexus_django.models import TaskRecord
from toolnexus_django.stores import DjangoTaskStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; POSIX signals"),
]

LEASE_SECONDS = 2.0
TERMINAL = ("completed", "failed", "canceled", "rejected")


def crash_env(fake: FakeLLM, **extra: str) -> dict[str, str]:
    """The fake model (no retries) and short recovery timing."""
    return {
        **fake_env(fake),
        "LLM_RETRIES": "0",
        "LLM_TIMEOUT_MS": "30000",
        "TOOLNEXUS_LEASE_SECONDS": f"{LEASE_SECONDS:g}",
        "TOOLNEXUS_SWEEP_INTERVAL": "0.5",
        "TOOLNEXUS_LOG_LEVEL": "INFO",
        **extra,
    }


# -- processes -----------------------------------------------------------------


def worker_pid(task: dict[str, Any]) -> int:
    """The pid of the process that ran ``task`` last (its lease's owner)."""
    return int(str(private_of(task).worker).rsplit(":", 1)[1])


def kill_whole_server(server: Served) -> set[int]:
    """SIGKILL the server's process group (gunicorn master and workers) and
    wait until every one of them is dead. Returns the pids killed."""
    assert os.getpgid(server.proc.pid) == server.proc.pid, "it leads its own process group"
    members = kill_group(server)
    assert len(members) >= 2, f"master and worker: {members}"
    return members


def stored(task_id: str) -> dict[str, Any]:
    task = DjangoTaskStore().get(task_id)
    assert task is not None, f"Task {task_id} is not in the database"
    return task


def lease_until(task_id: str) -> datetime:
    lease = private_of(stored(task_id)).lease
    assert lease is not None
    return datetime.fromisoformat(lease.until)


def assert_nothing_left_working() -> None:
    left = list(TaskRecord.objects.filter(state="working").values_list("id", flat=True))
    assert left == [], f"Tasks left working: {left}"


def status_text(task: dict[str, Any]) -> str:
    message = task["status"].get("message") or {}
    return "".join(part.get("text", "") for part in message.get("parts") or [])


# -- kill -9 mid-run, then a new server ----------------------------------------


@dataclass
class Crashed:
    task_id: str
    dead: set[int]  # the killed server's processes
    runner: int  # the worker process that held the Task


@contextmanager
def crashed_mid_run(tmp_path: Path, fake: FakeLLM, marker: str) -> Iterator[Crashed]:
    """A server whose one worker is in the middle of a model call for a Task
    when its whole process group is SIGKILLed. The fake answers the marker's
    next request (a re-run) with Text. The dead server's log stays open, so it
    is printed with the rest if the test fails."""
    fake.on(marker, Hang(max_seconds=30), Text(f"{marker}: finished after the crash"))
    with serve(tmp_path, "--threads", "4", env=crash_env(fake)) as first:
        card = first.wait_ready()
        task_id = RpcClient(card["url"]).send(f"{marker}: file my receipt")["id"]
        fake.wait_held(1, timeout=20)

        before = stored(task_id)
        assert before["status"]["state"] == "working"
        runner = worker_pid(before)
        assert private_of(before).lease.owner.endswith(f":{runner}")

        dead = kill_whole_server(first)
        assert runner in dead and runner != first.proc.pid

        # What the crash left in the database: still working, on a dead
        # worker's lease, one attempt used.
        left = stored(task_id)
        assert left["status"]["state"] == "working"
        assert worker_pid(left) == runner
        assert private_of(left).attempts == 1
        assert private_of(left).lease.owner.endswith(f":{runner}")
        yield Crashed(task_id, dead, runner)


@pytest.mark.django_db(transaction=True)
def test_kill_9_mid_run_then_a_new_server_runs_the_task_again(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    marker = "crash-rerun"
    with crashed_mid_run(tmp_path, fake_llm, marker) as crash:
        t0 = time.monotonic()
        with serve(tmp_path, "--threads", "4", env=crash_env(fake_llm)) as second:
            rpc = RpcClient(second.wait_ready()["url"])
            done = rpc.wait(crash.task_id, states=TERMINAL, timeout=45)
            recovered_in = time.monotonic() - t0
            assert done["status"]["state"] == "completed", done
            assert done["artifacts"][0]["parts"][0]["text"] == f"{marker}: finished after the crash"

            task = stored(crash.task_id)
            assert private_of(task).attempts == 2
            assert private_of(task).lease is None
            rerun_by = worker_pid(task)
            assert rerun_by not in crash.dead
            assert rerun_by in group_members(second.proc.pid)
            # One model call per attempt: the dead one, and the re-run.
            assert len(fake_llm.requests_for(marker)) == 2
            # The worker logs it just after the move the client already sees.
            wait_until(
                lambda: f"Task {crash.task_id}: its worker died (attempt 1)" in second.output(),
                timeout=10,
                what="the server to log it",
            )
            assert_nothing_left_working()
            # Every move, the dead worker's included, is in the event log, in order.
            kinds = [e["kind"] for e in assert_event_log(crash.task_id, DjangoTaskStore())]
            assert kinds == ["submit", "claim", "requeue", "claim", "complete"]
        # Boot + what is left of the 2 s lease + a 0.5 s sweep: well within
        # a minute (the bound is loose for busy machines).
        assert recovered_in < 30, recovered_in


@pytest.mark.django_db(transaction=True)
def test_kill_9_with_attempts_exhausted_ends_failed_with_the_interruption(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    marker = "crash-give-up"
    with crashed_mid_run(tmp_path, fake_llm, marker) as crash:
        env = crash_env(fake_llm, TOOLNEXUS_MAX_ATTEMPTS="1")
        with serve(tmp_path, "--threads", "4", env=env) as second:
            rpc = RpcClient(second.wait_ready()["url"])
            done = rpc.wait(crash.task_id, states=TERMINAL, timeout=30)
            assert done["status"]["state"] == "failed", done
            assert status_text(done) == interrupted_message(1)

            task = stored(crash.task_id)
            assert private_of(task).error == interrupted_message(1)
            assert private_of(task).attempts == 1
            assert private_of(task).lease is None
            assert len(fake_llm.requests_for(marker)) == 1, "given up, not run again"
            # The worker logs it just after the move the client already sees.
            wait_until(
                lambda: f"Task {crash.task_id}: {interrupted_message(1)}" in second.output(),
                timeout=10,
                what="the server to log it",
            )
            assert_nothing_left_working()


# -- the database server restarts mid-run --------------------------------------


OUTAGES = [
    # pg_ctl restart -m fast while the model call is held, then the run ends.
    "restart-then-finish",
    # The run ends while the database is down: its final write waits for it.
    "down-while-finishing",
    # ...for longer than a lease: recovery may take the Task when it is back.
    "down-longer-than-a-lease",
]


@pytest.mark.parametrize("outage", OUTAGES)
def test_postgresql_restarted_during_a_run(fake_llm: FakeLLM, tmp_path: Path, outage: str) -> None:
    """On a throwaway cluster of this test's own (never the shared server)."""
    if connection.vendor != "postgresql":
        pytest.skip(f"restarts a PostgreSQL server; this run's database is {connection.vendor}")
    if reason := pgcluster.unavailable():
        pytest.skip(reason)
    marker = f"pg-{outage}"
    answer = f"{marker}: finished across the outage"
    # The held call's answer, and the same answer for a re-run, if any.
    fake_llm.on(marker, Hang(max_seconds=60, then=Text(answer)), Text(answer))
    with pgcluster.pg_cluster() as pg:
        migrate(pg.url(), tmp_path / "migrate.log")
        env = crash_env(fake_llm, DATABASE_URL=pg.url())
        with serve(tmp_path, "--threads", "4", env=env) as server:
            rpc = RpcClient(server.wait_ready()["url"])
            task_id = rpc.send(f"{marker}: a run the database restarts under")["id"]
            fake_llm.wait_held(1, timeout=20)
            assert rpc.get(task_id)["result"]["status"]["state"] == "working"
            unreachable = f"Task {task_id}: database unreachable"

            if outage == "restart-then-finish":
                pg.restart("fast")
                fake_llm.release()
            else:
                pg.stop("fast")
                fake_llm.release()
                wait_until(
                    lambda: unreachable in server.output(),
                    timeout=20,
                    what="the finished run to find the database down",
                )
                if outage == "down-longer-than-a-lease":
                    down_since = time.monotonic()
                    wait_until(
                        lambda: (
                            time.monotonic() - down_since > LEASE_SECONDS + 0.5
                            and server.output().count(unreachable) >= 2
                        ),
                        timeout=LEASE_SECONDS + 20,
                        what="the lease to run out while the database is down",
                    )
                pg.start()

            done = rpc.wait(task_id, states=TERMINAL, timeout=90)
            assert done["status"]["state"] == "completed", done
            assert done["artifacts"][0]["parts"][0]["text"] == answer
            # The run that was interrupted wrote its outcome (it rode the
            # outage out: one model call, one attempt), or recovery ran the
            # Task again (two of each) -- counted either way.
            calls = len(fake_llm.requests_for(marker))
            attempts = pg.psql(
                f"SELECT attempts FROM toolnexus_django_taskrecord WHERE id = '{task_id}'"
            )
            assert (calls, int(attempts)) in ((1, 1), (2, 2)), (calls, attempts)

            # The server still serves: a new Task, start to finish.
            fake_llm.on("pg-after", Text("served after the restart"))
            after = rpc.send("pg-after: a new one")["id"]
            again = rpc.wait(after, states=TERMINAL, timeout=30)
            assert again["status"]["state"] == "completed", again
            assert again["artifacts"][0]["parts"][0]["text"] == "served after the restart"

            counts = pg.psql(
                "SELECT state || '=' || count(*) FROM toolnexus_django_taskrecord "
                "GROUP BY state ORDER BY state"
            )
            assert counts.split() == ["completed=2"], counts


# -- graceful shutdown ---------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_sigterm_lets_a_run_in_flight_finish_within_the_grace(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    marker = "stopping"
    fake_llm.on(marker, Hang(max_seconds=30, then=Text(f"{marker}: finished while stopping")))
    with serve(tmp_path, "--grace", "20", env=crash_env(fake_llm)) as server:
        rpc = RpcClient(server.wait_ready()["url"])
        task_id = rpc.send(f"{marker}: a slow one")["id"]
        fake_llm.wait_held(1, timeout=20)

        server.signal(signal.SIGTERM)  # the master, as a process manager does
        wait_until(
            lambda: "Handling signal: term" in server.output(),
            timeout=10,
            what="the server to begin stopping",
        )
        # While it stops, the worker still renews the run's lease (else a
        # live server's sweep would take the Task from under the run).
        until = lease_until(task_id)
        wait_until(
            lambda: lease_until(task_id) > until,
            timeout=LEASE_SECONDS * 3,
            what="the lease to be renewed while the server stops",
        )
        assert server.proc.poll() is None, "the server waits for the running Task"
        assert stored(task_id)["status"]["state"] == "working"

        fake_llm.release()
        assert server.wait(timeout=25) == 0
        out = server.output()
        finished = out.find(f"Task {task_id}: working -> completed")
        assert finished != -1, "the run finished in the worker"
        assert finished < out.index("toolnexus_serve stopped."), "before the process exited"

    task = stored(task_id)
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["text"] == f"{marker}: finished while stopping"
    assert private_of(task).attempts == 1
    assert_nothing_left_working()


@pytest.mark.django_db(transaction=True)
def test_a_run_outliving_the_grace_is_released_and_a_new_server_runs_it(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    marker = "outlives"
    fake_llm.on(marker, Hang(max_seconds=30), Text(f"{marker}: run by the next server"))
    with serve(tmp_path, "--grace", "1", env=crash_env(fake_llm)) as first:
        rpc = RpcClient(first.wait_ready()["url"])
        task_id = rpc.send(f"{marker}: longer than the grace")["id"]
        fake_llm.wait_held(1, timeout=20)
        first.signal(signal.SIGTERM)
        assert first.wait(timeout=20) == 0
        assert f"Task {task_id}: released by a stopping worker" in first.output()

        # Handed back, not left working until its lease expires; the attempt
        # the stop cut short is not counted.
        task = stored(task_id)
        assert task["status"]["state"] == "submitted"
        assert private_of(task).attempts == 0
        assert private_of(task).lease is None
        assert_nothing_left_working()

        # The next server's sweep finds it submitted and not taken, and runs it.
        env = crash_env(fake_llm, TOOLNEXUS_REQUEUE_AFTER="1")
        with serve(tmp_path, env=env) as second:
            rpc = RpcClient(second.wait_ready()["url"])
            done = rpc.wait(task_id, states=TERMINAL, timeout=30)
            assert done["status"]["state"] == "completed", done
            assert done["artifacts"][0]["parts"][0]["text"] == f"{marker}: run by the next server"
            assert private_of(stored(task_id)).attempts == 1
            assert len(fake_llm.requests_for(marker)) == 2
            assert_nothing_left_working()
