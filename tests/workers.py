"""Worker processes of a Django Tasks engine on the test database, for tests
whose Tasks run in a worker of their own: started when asked, stopped
gracefully by the test or killed at the end whatever happens.

Two engines (their aliases in testproject/settings.py's ``TASKS``):

- ``"database"``: django-tasks-db's DatabaseBackend, run by ``manage.py db_worker``;
  a worker runs each job itself.
- ``"rq"``: django-tasks-rq's RQBackend on Redis, run by ``manage.py rqworker
  --job-class django_tasks_rq.Job``; RQ's default worker forks a work horse per
  job, so the run (and its lease) is the horse's, a child of the worker.
  Each test gets a Redis database of its own (:func:`redis_database`): tests
  under pytest-xdist, and test runs side by side, never share an RQ queue.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_until
from tests.servers import ROOT, database_url

#: The engines, by their alias in settings.TASKS.
ENGINES = ("database", "rq")

#: The Redis the RQ tests use (.ci/run starts one there when none answers).
REDIS = os.environ.get("TOOLNEXUS_TEST_REDIS", "redis://127.0.0.1:6379")

#: A process logs this once it has started the app's agent runtime: the
#: process that runs Tasks (an rqworker's horse, not the rqworker itself).
RUNTIME_STARTED = re.compile(r"toolnexus runtime started in process (\d+)")


def _command(engine: str, n: int) -> list[str]:
    name = f"w{n}-{os.getpid()}"
    if engine == "database":
        return [
            *("db_worker", "--backend", "database", "--interval", "0.1"),
            *("--no-startup-delay", "--no-reload", "--worker-id", name),
        ]
    if engine == "rq":
        return ["rqworker", "--job-class", "django_tasks_rq.Job", "--name", name]
    raise ValueError(f"no such engine: {engine!r}")


#: What each engine's worker logs once it waits for jobs.
_READY = {"database": "Starting worker", "rq": "Listening on"}


@dataclass
class Worker:
    proc: subprocess.Popen[bytes]
    log: Path
    engine: str

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def runners(self) -> set[int]:
        """The processes that ran Tasks for this worker: itself (db_worker)
        or its work horses (rqworker), as they logged it."""
        return {int(pid) for pid in RUNTIME_STARTED.findall(self.output())}

    def wait_ready(self, timeout: float = 30) -> None:
        """Until it waits for jobs (it says so); fail at once if it died."""

        def polling() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"the worker exited early: {self.output()[-2000:]}")
            return _READY[self.engine] in self.output()

        wait_until(polling, timeout=timeout, interval=0.05, what=f"the {self.engine} worker")

    def stop(self, timeout: float = 20) -> int:
        """SIGTERM: it ends the job in hand, then exits."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the worker did not stop within {timeout}s") from None

    def kill(self) -> set[int]:
        """kill -9 of the worker and of every process it started (an
        rqworker's horse lives in a process group of its own), as a lost
        machine would; waits until they are all dead. Returns their pids."""
        doomed = [self.pid, *descendants(self.pid)]
        for pid in doomed:  # the worker first: it never sees its horse die
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(10)
        wait_until(
            lambda: not any(alive(pid) for pid in doomed),
            timeout=10,
            what=f"the worker's processes {doomed} to die",
        )
        return set(doomed)


@dataclass
class Workers:
    tmp_path: Path
    env: dict[str, str]
    engine: str = "database"
    started: list[Worker] = field(default_factory=list)

    def start(self) -> Worker:
        n = len(self.started)
        log = self.tmp_path / f"{self.engine}-worker-{n}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
        env.update(
            {
                "DATABASE_URL": database_url(),
                "TOOLNEXUS_STORE": "django",
                "TOOLNEXUS_TASK_BACKEND": self.engine,
                "PYTHONUNBUFFERED": "1",
                **self.env,
            }
        )
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "manage.py", *_command(self.engine, n)],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        worker = Worker(proc, log, self.engine)
        self.started.append(worker)
        return worker

    def runners(self) -> set[int]:
        """Every process that ran Tasks for these workers."""
        return set().union(*(w.runners() for w in self.started))


@contextmanager
def task_workers(
    engine: str, tmp_path: Path, env: dict[str, str], settings: Any
) -> Iterator[Workers]:
    """A place to start ``engine``'s worker processes (``.start()``), with
    this process (``settings``: pytest-django's) enqueueing where they
    listen; every one still running at the end is killed, its horse too, and
    their output printed if the test failed."""
    with _engine_queue(engine, settings) as extra:
        workers = Workers(tmp_path, {**env, **extra}, engine)
        try:
            yield workers
        except BaseException:
            for w in workers.started:
                print(f"--- {engine} worker {w.pid} output ({w.log}) ---\n{w.output()[-4000:]}")
            raise
        finally:
            for w in workers.started:
                if w.proc.poll() is None:
                    w.kill()


@contextmanager
def db_workers(tmp_path: Path, env: dict[str, str]) -> Iterator[Workers]:
    """db_worker processes (``task_workers`` for the "database" engine)."""
    with task_workers("database", tmp_path, env, None) as workers:
        yield workers


@contextmanager
def _engine_queue(engine: str, settings: Any) -> Iterator[dict[str, str]]:
    """What the workers' environment needs to listen where this process
    enqueues: nothing for db_worker (the test database is the queue); for
    RQ, a Redis database of this test's own, in both."""
    if engine != "rq":
        yield {}
        return
    with redis_database() as url:
        settings.RQ_QUEUES = {"default": {"URL": url}}
        yield {"TOOLNEXUS_RQ_URL": url}


@contextmanager
def redis_database() -> Iterator[str]:
    """The URL of a Redis database (a number above 0) no one else uses while
    the test runs: claimed in database 0 (``SET NX``, with an expiry in case
    the test run is killed), emptied before and after. A database holding
    keys that a test did not leave there is never touched."""
    redis = pytest.importorskip("redis")
    base = redis.Redis.from_url(f"{REDIS}/0", socket_connect_timeout=2)
    try:
        count = int(base.config_get("databases")["databases"])
    except redis.exceptions.ConnectionError as exc:
        base.close()
        pytest.skip(f"needs Redis at {REDIS} (.ci/run starts one): {exc}")
    owner = f"{socket.gethostname()}:{os.getpid()}"
    for number in range(1, count):
        claim = f"toolnexus-tests:redis-db:{number}"
        if not base.set(claim, owner, nx=True, ex=900):
            continue  # another test's, now
        db = redis.Redis.from_url(f"{REDIS}/{number}")
        if db.dbsize() and not db.exists(_MARK):
            db.close()
            base.delete(claim)
            continue  # someone's data: left alone
        db.flushdb()  # what a killed test run left
        db.set(_MARK, owner)
        break
    else:
        base.close()
        raise AssertionError(f"all Redis databases 1-{count - 1} at {REDIS} are in use")
    try:
        yield f"{REDIS}/{number}"
    finally:
        db.flushdb()
        if base.get(claim) == owner.encode():
            base.delete(claim)
        db.close()
        base.close()


#: Set in a Redis database the tests use (and deleted with everything else).
_MARK = "toolnexus-tests:in-use"


# -- what the tests look at ----------------------------------------------------------------


@contextmanager
def sweeping() -> Iterator[None]:
    """This process sweeps, as the web process of such a deployment does
    (toolnexus_serve, or toolnexus_sweep --loop: workers do not sweep); what
    it recovers is enqueued on the engine, as any run is."""
    from toolnexus_django.fulfilment.sweep import Housekeeper

    housekeeper = Housekeeper(interval=0.2).start()
    try:
        yield
    finally:
        assert housekeeper.stop(timeout=10), "the sweep did not stop"


def runner_of(task_id: str) -> int:
    """The pid of the process that ran ``task_id`` last (its lease's owner)."""
    from tests.utils import private_of

    return int(str(private_of(task_id).worker).rsplit(":", 1)[1])


def rq_jobs(task_id: str) -> list[Any]:
    """The RQ jobs (django-tasks-rq's) of ``task_id``, oldest first, in the
    test's Redis database: whatever RQ did with them, every one is there."""
    import django_rq
    from django_tasks_rq import Job

    connection = django_rq.get_connection("default")
    ids = [
        key.decode().removeprefix("rq:job:")
        for key in connection.scan_iter(match="rq:job:*")
        if key.count(b":") == 2
    ]
    jobs = [j for j in Job.fetch_many(ids, connection=connection) if j is not None]
    return sorted(
        (j for j in jobs if list(j.args) == [task_id]), key=lambda j: (j.enqueued_at, j.id)
    )


def rq_fails_it_once_its_heartbeat_lapses(job: Any) -> None:
    """What an rqworker's maintenance does with the job of a worker that died
    (once the job's heartbeat has lapsed, about 90 s later), done now: RQ
    fails it, and -- django-tasks-rq gives jobs no retries -- never queues it
    again."""
    from rq.registry import StartedJobRegistry

    assert job.get_status(refresh=True) == "started", "as the dead worker left it"
    registry = StartedJobRegistry(job.origin, connection=job.connection)
    registry.cleanup(timestamp=job.started_at.timestamp() + 3600)
    assert job.get_status(refresh=True) == "failed"


# -- processes --------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid`` from /proc, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) "
    return fields[0], int(fields[1])


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as dead)."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def descendants(pid: int) -> list[int]:
    """The live processes below ``pid`` (children first)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = stat[1]
    found: list[int] = []
    frontier = [pid]
    while frontier:
        children = [c for c, p in parents.items() if p in frontier and alive(c)]
        found += children
        frontier = children
    return found
