"""Wake-ups across processes (issue 31): how soon a stream on one
``toolnexus_serve`` hears of a move made on another, and what an idle process
with open streams asks of its database -- with PostgreSQL NOTIFY (the
default, ``notify``) and with polling only (``poll``:
``TOOLNEXUS_EVENT_LISTENER=off``, a look at the event log every
``EVENT_POLL_INTERVAL``, 0.2 s), in one run.

Latency. ``--instances`` servers (``manage.py toolnexus_serve --workers 1``
each) and one ``manage.py db_worker --backend database`` (django-tasks-db:
``TOOLNEXUS_TASK_BACKEND=database``, the Tasks run there) share one PostgreSQL
database. The worker first takes a Task whose model call hangs (the fake model
of benchmarks/loadclient.py, ``[sleep 3600]``), so the ``--moves`` Tasks sent
next (SendMessage, returnImmediately) wait ``submitted`` in its queue. Each
gets a v1.0 SubscribeToTask stream on instance X (round robin); once every
stream has its first event (the Task) and, with NOTIFY, every instance's
listener is connected (pg_stat_activity), a CancelTask goes to an instance
Y != X, ``--rate`` a second on a fixed schedule (open loop). Latency: from
the CancelTask's HTTP response (the move has committed) to the CANCELED
event's arrival on the stream (negative when the event came first); "from
send" counts from the request instead.

Idle. One instance alone on a database of its own (no worker, nothing else
connected to it): the database transactions it commits per second over
``--window`` seconds with no stream open, then with ``--idle-streams``
streams open on Tasks that do not move (``submitted``, no worker takes
them), each window after ``--settle`` seconds (pg_stat_database's
xact_commit + xact_rollback of that database; in autocommit every statement
is one, so it is a floor on statements). ``--heartbeat S`` adds the streams'
rows again with ``TOOLNEXUS["STREAM_HEARTBEAT"] = S`` (a settings module
written into the run's temporary directory): a quiet stream reads the store
around each keep-alive (``a2a/follow.py``, ``afollow``), whatever wakes it.

Every phase runs on a fresh database, a copy of one migrated template, all
dropped at the end; submitted Tasks are re-enqueued by the sweep after
``REQUEUE_AFTER`` (60 s), so the servers get ``TOOLNEXUS_REQUEUE_AFTER=3600``
(recovery, not wake-ups). Everything listens on 127.0.0.1; every process
started is stopped by its pid (its process group).

    .venv/bin/python benchmarks/wakeups.py                    # issue 31's sizes, ~5 minutes
    .venv/bin/python benchmarks/wakeups.py --rounds 2 --heartbeat 600 --threads 8 -v
    .venv/bin/python benchmarks/wakeups.py --instances 2 --moves 20 --idle-streams 20 \
        --window 1 --baseline-window 0 --settle 0.5 --threads 4  # the smoke test's sizes

Results: benchmarks/RESULTS.md ("Wake-ups across processes (issue 31)").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from loadclient import Connection  # noqa: E402
from servers import machine  # noqa: E402
from versus_sdk import V1, Server, message, pct, rpc  # noqa: E402

PY = sys.executable
PATH = "/agent/"
MODES = ("notify", "poll")
#: How the listener's session shows in pg_stat_activity (lifecycle/listener.py).
LISTENER_APP = "toolnexus-listener"
#: Longest wait for an event after the last move, and for a stream to open.
DEADLINE = 15.0
#: Set by --verbose: each phase's steps are printed, with the seconds since it began.
VERBOSE = False


def step(began: float, what: str) -> None:
    if VERBOSE:
        print(f"    {time.monotonic() - began:6.1f} s  {what}", flush=True)


# -- PostgreSQL ----------------------------------------------------------------------------


def db_url(admin: str, name: str, application: str | None = None) -> str:
    parts = urlsplit(admin)
    query = f"application_name={application}" if application else ""
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", query, ""))


def sql(admin: str, statement: str, params: list[Any] | None = None) -> Any:
    """One statement on the admin database (never a benchmark's: it counts nothing there)."""
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        cursor = conn.execute(statement, params)
        return cursor.fetchone() if cursor.description else None


def drop(admin: str, name: str) -> None:
    sql(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def transactions(admin: str, name: str) -> int:
    """Transactions the database has committed or rolled back (pg_stat_database)."""
    row = sql(
        admin,
        "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
        [name],
    )
    return int(row[0])


def sessions(admin: str, name: str, application: str | None = None) -> int:
    row = sql(
        admin,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
        + (" AND application_name = %s" if application else ""),
        [name, application] if application else [name],
    )
    return int(row[0])


# -- processes -----------------------------------------------------------------------------


@dataclass
class Stopping:
    """Processes sent SIGTERM, waited for in the background: a phase does not
    wait for its servers' graceful stop (seconds each) before the next starts;
    the run collects their exit codes at its end, then drops the databases."""

    waits: dict[str, asyncio.Task[int | None]] = field(default_factory=dict)

    def stop(self, *servers: Server) -> None:
        for server in servers:
            assert server.proc is not None
            if server.proc.poll() is None:
                os.killpg(server.proc.pid, signal.SIGTERM)  # once: twice forces a db_worker
            self.waits[server.name] = asyncio.create_task(asyncio.to_thread(exit_code, server))

    async def codes(self) -> dict[str, int | None]:
        return {name: await wait for name, wait in self.waits.items()}


def exit_code(server: Server, timeout: float = 30) -> int | None:
    """Its exit code once it stopped; None if it had to be killed."""
    assert server.proc is not None
    try:
        return server.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(5)
        return None


@dataclass
class Setup:
    args: argparse.Namespace
    workdir: Path
    admin: str
    template: str
    databases: list[str] = field(default_factory=list)
    stopping: Stopping = field(default_factory=Stopping)

    def new_database(self, suffix: str) -> str:
        name = f"{self.args.database}_{suffix}"
        drop(self.admin, name)
        sql(self.admin, f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        self.databases.append(name)
        return name

    def env(
        self, name: str, mode: str, role: str, model_url: str = "", heartbeat: float = 0
    ) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("LLM_", "TOOLNEXUS_", "DATABASE_", "DEMO_", "DJANGO_"))
        }
        env.update(
            DATABASE_URL=db_url(self.admin, name, f"tnx-wakeups-{role}"),
            DJANGO_SETTINGS_MODULE="testproject.settings",
            DEMO_AGENT="example",  # the test suite's agent: no authentication classes
            TOOLNEXUS_STORE="django",
            TOOLNEXUS_TASK_BACKEND="database",
            TOOLNEXUS_LOG_LEVEL="WARNING",
            TOOLNEXUS_REQUEUE_AFTER="3600",
        )
        if mode == "poll":
            env["TOOLNEXUS_EVENT_LISTENER"] = "off"
        env.update(item.split("=", 1) for item in self.args.env)
        if model_url:
            env.update(LLM_BASE_URL=model_url, LLM_RETRIES="0", LLM_TIMEOUT_MS="3600000")
        if heartbeat:
            module = f"wakeups_heartbeat_{str(heartbeat).replace('.', '_')}"
            (self.workdir / f"{module}.py").write_text(
                "from testproject.settings import *  # noqa: F403\n\n"
                f"TOOLNEXUS['STREAM_HEARTBEAT'] = {float(heartbeat)!r}  # noqa: F405\n"
            )
            env["DJANGO_SETTINGS_MODULE"] = module
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(self.workdir), env.get("PYTHONPATH", "")) if p
            )
        return env

    def serve(self, env: dict[str, str], label: str) -> Server:
        argv = [PY, "manage.py", "toolnexus_serve", "127.0.0.1:{port}", "--workers", "1"]
        if self.args.threads:
            argv += ["--threads", str(self.args.threads)]
        return Server(label, argv, env, PATH, self.workdir / f"{label}.log")

    def db_worker(self, env: dict[str, str], label: str) -> Server:
        # --interval: how often it looks for a job while it has none (1 s by default):
        # only until it takes the holding Task, which it then runs for the whole phase.
        argv = [PY, "manage.py", "db_worker", "--backend", "database", "--no-startup-delay",
                "--no-reload", "--interval", "0.2",
                "--worker-id", f"wakeups-{os.getpid()}"]  # fmt: skip
        return Server(label, argv, env, PATH, self.workdir / f"{label}.log")


def prepare(args: argparse.Namespace, workdir: Path) -> Setup:
    """The template database, migrated once; every phase copies it."""
    template = f"{args.database}_template"
    setup = Setup(args, workdir, args.pg_admin, template)
    drop(setup.admin, template)
    sql(setup.admin, f'CREATE DATABASE "{template}"')
    setup.databases.append(template)
    env = setup.env(template, "notify", "migrate")
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return setup


class FakeModel:
    """benchmarks/loadclient.py's fake model: ``[sleep S]`` answers after S seconds."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [PY, str(HERE / "loadclient.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, start_new_session=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def stop(self) -> None:
        """Closing its stdin stops it; a call it holds ends with its connection."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


def started(server: Server) -> Server:
    server.start()
    return server


async def wait_listening(setup: Setup, name: str, count: int) -> None:
    """Until ``count`` listener sessions are on the database, then half a
    second more (the probe's round trip, the catch-up beat)."""
    deadline = time.monotonic() + 30
    while await asyncio.to_thread(sessions, setup.admin, name, LISTENER_APP) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{count} listeners never connected to {name}")
        await asyncio.sleep(0.2)
    await asyncio.sleep(0.5)


# -- the client ----------------------------------------------------------------------------


async def send_waiting(port: int, text: str, conn: Connection | None = None) -> str:
    """A non-blocking SendMessage; the new Task's id (it must be submitted)."""
    own = conn is None
    conn = conn or Connection("127.0.0.1", port)
    try:
        params = {"message": message(text), "configuration": {"returnImmediately": True}}
        reply = await conn.post(PATH, rpc("SendMessage", params), V1)
        task = reply.json()["result"]["task"]
    finally:
        if own:
            conn.close()
    if task["status"]["state"] != "TASK_STATE_SUBMITTED":
        raise RuntimeError(f"the Task is {task['status']['state']}, not submitted")
    return str(task["id"])


async def send_many(ports: list[int], count: int, label: str) -> list[str]:
    """``count`` waiting Tasks, sent round robin over ``ports`` by 16 clients."""
    ids: list[str | None] = [None] * count
    queue = iter(range(count))

    async def client() -> None:
        conns = {port: Connection("127.0.0.1", port) for port in ports}
        try:
            for i in queue:
                port = ports[i % len(ports)]
                ids[i] = await send_waiting(port, f"{label} {i}", conns[port])
        finally:
            for conn in conns.values():
                conn.close()

    await asyncio.gather(*(client() for _ in range(16)))
    return [i for i in ids if i is not None]


async def hold_the_worker(port: int) -> str:
    """A Task whose model call hangs: the db_worker runs it, and nothing else."""
    task_id = await send_waiting(port, "[sleep 3600] keep the worker busy")
    conn = Connection("127.0.0.1", port)
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            got = await conn.post(PATH, rpc("GetTask", {"id": task_id}), V1)
            if got.json()["result"]["status"]["state"] == "TASK_STATE_WORKING":
                return task_id
            await asyncio.sleep(0.1)
    finally:
        conn.close()
    raise RuntimeError("the db_worker did not take the holding Task within 30 s")


@dataclass
class Stream:
    """One SubscribeToTask stream: opened (the Task came), then the first move."""

    task_id: str
    port: int
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    first: bool = False
    arrived: float | None = None
    state: str | None = None
    error: str | None = None
    reader: asyncio.Task[None] | None = None
    conn: Connection | None = None

    async def follow(self) -> None:
        self.conn = Connection("127.0.0.1", self.port)
        try:
            body = rpc("SubscribeToTask", {"id": self.task_id})
            async for event in self.conn.events(PATH, body, V1):
                now = time.monotonic()
                result = event.get("result") or {}
                if "task" in result and not self.first:
                    self.first = True
                    self.opened.set()
                    continue
                update = result.get("statusUpdate")
                if update is not None:
                    self.arrived, self.state = now, update["status"]["state"]
                    return
                self.error = f"unexpected event {str(event)[:200]}"
                return
            self.error = "the stream ended without an event"
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.error = repr(exc)
        finally:
            self.conn.close()
            self.opened.set()

    def close(self) -> None:
        if self.reader is not None and not self.reader.done():
            self.reader.cancel()
        if self.conn is not None:
            self.conn.close()


async def open_streams(streams: list[Stream], at_once: int = 64) -> None:
    """Start every stream (``at_once`` opening at a time); each has its first event."""
    gate = asyncio.Semaphore(at_once)

    async def one(stream: Stream) -> None:
        async with gate:
            stream.reader = asyncio.create_task(stream.follow())
            await asyncio.wait_for(stream.opened.wait(), DEADLINE)

    await asyncio.gather(*(one(s) for s in streams))
    broken = [s for s in streams if not s.first]
    if broken:
        raise RuntimeError(f"{len(broken)} streams did not open: {broken[0].error}")


async def loop_lag(stop: asyncio.Event, lags: list[float]) -> None:
    """How late this client's event loop wakes (it stamps every arrival)."""
    while not stop.is_set():
        t = time.monotonic()
        await asyncio.sleep(0.01)
        lags.append(time.monotonic() - t - 0.01)


async def sample_sessions(setup: Setup, name: str, stop: asyncio.Event, seen: list[int]) -> None:
    while not stop.is_set():
        seen.append(await asyncio.to_thread(sessions, setup.admin, name))
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except TimeoutError:
            pass


# -- latency -------------------------------------------------------------------------------


@dataclass
class Move:
    port: int = 0
    sent: float = 0.0
    answered: float = 0.0
    state: str | None = None
    error: str | None = None


async def latency(setup: Setup, mode: str, round_: int) -> dict[str, Any]:
    args = setup.args
    t = time.monotonic()
    name = setup.new_database(f"{mode}_{round_}")
    fake = FakeModel()
    label = f"{mode}-{round_}"
    worker = started(setup.db_worker(setup.env(name, mode, "worker", fake.url), f"worker-{label}"))
    servers = [
        started(setup.serve(setup.env(name, mode, f"serve{i}", fake.url), f"serve{i}-{label}"))
        for i in range(args.instances)
    ]
    stop = asyncio.Event()
    seen: list[int] = []
    sampler = asyncio.create_task(sample_sessions(setup, name, stop, seen))
    streams: list[Stream] = []
    pools: dict[int, list[Connection]] = {}
    try:
        await asyncio.gather(*(s.ready() for s in servers))
        step(t, "servers ready")
        ports = [s.port for s in servers]
        await hold_the_worker(ports[0])
        step(t, "the worker holds its Task")
        ids = await send_many(ports, args.moves, "wait")
        step(t, f"{len(ids)} Tasks sent")
        k = len(ports)
        streams = [Stream(task_id, ports[i % k]) for i, task_id in enumerate(ids)]
        await open_streams(streams)
        step(t, f"{len(streams)} streams open")
        if mode == "notify":
            await wait_listening(setup, name, k)
        else:
            await asyncio.sleep(0.5)
        step(t, "listening" if mode == "notify" else "polling")
        # Connections for the moves, opened beforehand (a move is not a connect).
        pools = {port: [Connection("127.0.0.1", port) for _ in range(8)] for port in ports}
        await asyncio.gather(*(c.open() for conns in pools.values() for c in conns))
        moves = [Move() for _ in streams]

        async def cancel(i: int, port: int) -> None:
            move = moves[i]
            move.port = port
            conn = pools[port].pop() if pools[port] else Connection("127.0.0.1", port)
            try:
                move.sent = time.monotonic()
                reply = await conn.post(PATH, rpc("CancelTask", {"id": streams[i].task_id}), V1)
                move.answered = time.monotonic()
                move.state = reply.json().get("result", {}).get("status", {}).get("state")
            except Exception as exc:
                move.error = repr(exc)
                conn.close()
                return
            pools[port].append(conn)

        lags: list[float] = []
        lagging = asyncio.create_task(loop_lag(stop, lags))
        cpu0 = sum(s.cpu() for s in servers)
        began = time.monotonic() + 0.1
        sending = []
        for i in range(len(streams)):
            delay = began + i / args.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            x = i % k
            y = (x + 1 + (i // k) % (k - 1)) % k  # another instance, in turn
            sending.append(asyncio.create_task(cancel(i, ports[y])))
        last_sent = time.monotonic()
        await asyncio.gather(*sending)
        readers = [s.reader for s in streams if s.reader is not None]
        await asyncio.wait(readers, timeout=DEADLINE)
        cpu = sum(s.cpu() for s in servers) - cpu0
        stop.set()
        await lagging
        step(t, "moved, and heard")
    finally:
        stop.set()
        for stream in streams:
            stream.close()
        for conns in pools.values():
            for conn in conns:
                conn.close()
        await sampler
        # SIGTERM first: the worker exits as soon as the holding Task's model
        # call ends (the fake model stops), before it takes another job.
        setup.stopping.stop(worker)
        fake.stop()
        setup.stopping.stop(*servers)
        step(t, "stopping")

    delivered = [
        (s.arrived - m.answered, s.arrived - m.sent)
        for s, m in zip(streams, moves, strict=True)
        if s.arrived is not None and s.state == "TASK_STATE_CANCELED" and m.answered
    ]
    after = [1000 * a for a, _ in delivered]
    from_send = [1000 * b for _, b in delivered]
    answers = [1000 * (m.answered - m.sent) for m in moves if m.answered]
    # The slowest: ms, the stream's and the move's instance, s into the moves (a stall
    # shows as several at one time, on every instance).
    slowest = sorted(
        (
            round(1000 * (s.arrived - m.answered)),
            ports.index(s.port),
            ports.index(m.port),
            round(m.sent - began, 2),
        )
        for s, m in zip(streams, moves, strict=True)
        if s.arrived is not None and m.answered
    )[-5:]
    failures = [m.error or m.state for m in moves if m.state != "TASK_STATE_CANCELED"]
    failures += [s.error or s.state for s in streams if s.state != "TASK_STATE_CANCELED"]
    return {
        "mode": mode,
        "round": round_,
        "moves": len(moves),
        "rate": (len(moves) - 1) / max(1e-9, last_sent - began) if len(moves) > 1 else 0.0,
        "delivered": len(delivered),
        "p50": pct(after, 0.5),
        "p99": pct(after, 0.99),
        "max": max(after, default=float("nan")),
        "min": min(after, default=float("nan")),
        "early": sum(1 for a in after if a < 0),
        "send_p50": pct(from_send, 0.5),
        "send_p99": pct(from_send, 0.99),
        "cancel_p50": pct(answers, 0.5),
        "cpu_ms": 1000 * cpu / max(1, len(moves)),
        "lag_p99": 1000 * pct(lags, 0.99),
        "sessions": max(seen, default=0),
        "failures": sorted({str(f) for f in failures})[:3],
        "slowest": slowest,
    }


# -- idle ----------------------------------------------------------------------------------


async def measure_window(setup: Setup, name: str, seconds: float) -> tuple[int, float]:
    before = await asyncio.to_thread(transactions, setup.admin, name)
    t0 = time.monotonic()
    await asyncio.sleep(seconds)
    after = await asyncio.to_thread(transactions, setup.admin, name)
    return after - before, time.monotonic() - t0


async def idle(setup: Setup) -> list[dict[str, Any]]:
    args = setup.args
    name = setup.new_database("idle")
    plan = [(mode, 0.0) for mode in args.modes]
    if args.heartbeat:
        plan += [(mode, float(args.heartbeat)) for mode in args.modes]
    rows: list[dict[str, Any]] = []
    ids: list[str] = []

    async def window(mode: str, heartbeat: float, streams: list[Stream], seconds: float) -> None:
        load = os.getloadavg()[0]
        done, took = await measure_window(setup, name, seconds)
        still = sum(1 for s in streams if s.reader is not None and not s.reader.done())
        connected = await asyncio.to_thread(sessions, setup.admin, name)
        rows.append({"mode": mode, "heartbeat": heartbeat, "streams": len(streams),
                     "window": took, "transactions": done, "open": still, "load": load,
                     "sessions": connected})  # fmt: skip
        print(f"  idle: {rows[-1]}", flush=True)

    for mode, heartbeat in plan:
        env = setup.env(name, mode, "idle", heartbeat=heartbeat)
        label = f"idle-{mode}" + (f"-hb{heartbeat:g}" if heartbeat else "")
        t = time.monotonic()
        server = started(setup.serve(env, label))
        streams: list[Stream] = []
        try:
            await server.ready()
            step(t, f"{label} ready")
            if not ids:  # once: the Tasks wait for a worker that never comes
                ids = await send_many([server.port], args.idle_streams, "idle")
                step(t, f"{len(ids)} Tasks sent")
            if args.baseline_window and not heartbeat:
                await asyncio.sleep(args.settle)
                await window(mode, 0.0, [], args.baseline_window)
                step(t, "measured with no stream")
            streams = [Stream(task_id, server.port) for task_id in ids]
            await open_streams(streams)
            if mode == "notify":
                await wait_listening(setup, name, 1)
            step(t, f"{len(streams)} streams open")
            await asyncio.sleep(args.settle)
            await window(mode, heartbeat, streams, args.window)
        finally:
            for stream in streams:
                stream.close()
            setup.stopping.stop(server)
            step(t, "stopping")
    return rows


# -- the run -------------------------------------------------------------------------------


def ms(value: float) -> str:
    return "-" if value != value else f"{value:.1f}"


def show_latency(rows: list[dict[str, Any]], instances: int) -> None:
    print(
        f"\nLatency: a move on one of {instances} instances to the event on a stream of another"
        " (ms from the move's HTTP response; 'from send': from its request)\n"
    )
    print(
        "| mode | round | moves (rate /s) | delivered | p50 | p99 | max | min (early) "
        "| from send p50 / p99 | CancelTask p50 | server CPU ms/move | client lag p99 "
        "| DB sessions (peak) |"
    )
    print("|---|---|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['mode']} | {r['round']} | {r['moves']} ({r['rate']:.0f}) | {r['delivered']} "
            f"| {ms(r['p50'])} | {ms(r['p99'])} | {ms(r['max'])} | {ms(r['min'])} ({r['early']}) "
            f"| {ms(r['send_p50'])} / {ms(r['send_p99'])} | {ms(r['cancel_p50'])} "
            f"| {r['cpu_ms']:.2f} | {ms(r['lag_p99'])} | {r['sessions']} |"
        )
    for r in rows:
        if r["failures"]:
            print(f"  {r['mode']} round {r['round']} failures: {r['failures']}")


def show_idle(rows: list[dict[str, Any]]) -> None:
    print("\nIdle: one process's database transactions per second (pg_stat_database)\n")
    print(
        "| mode | stream heartbeat | open streams | window s | transactions | per second "
        "| streams still open | DB sessions | load |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        heartbeat = f"{r['heartbeat']:g} s" if r["heartbeat"] else "default"
        print(
            f"| {r['mode']} | {heartbeat} | {r['streams']} | {r['window']:.1f} "
            f"| {r['transactions']} | {r['transactions'] / r['window']:.2f} "
            f"| {r['open']} | {r['sessions']} | {r['load']:.2f} |"
        )


async def run(setup: Setup) -> int:
    bad = 0
    try:
        bad = await measure(setup)
    finally:
        codes = await setup.stopping.codes()
        print(f"\nexit codes on SIGTERM: {codes}")
    print(f"load average at the end {os.getloadavg()}")
    return 1 if bad or any(code != 0 for code in codes.values()) else 0


async def measure(setup: Setup) -> int:
    """Both measurements; how many moves or streams went wrong."""
    args = setup.args
    bad = 0
    if "latency" in args.only:
        rows = []
        for round_ in range(1, args.rounds + 1):
            for mode in args.modes:
                print(f"latency {mode} round {round_} (load average {os.getloadavg()[0]:.2f})",
                      flush=True)  # fmt: skip
                row = await latency(setup, mode, round_)
                print(f"  {row}", flush=True)
                rows.append(row)
                bad += row["moves"] - row["delivered"]
        show_latency(rows, args.instances)
    if "idle" in args.only:
        print(f"idle (load average {os.getloadavg()[0]:.2f})", flush=True)
        idle_rows = await idle(setup)
        show_idle(idle_rows)
        bad += sum(r["streams"] - r["open"] for r in idle_rows)
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", nargs="*", choices=["latency", "idle"],
                        default=["latency", "idle"])  # fmt: skip
    parser.add_argument("--modes", nargs="*", choices=MODES, default=list(MODES))
    parser.add_argument("--instances", type=int, default=4, help="toolnexus_serve instances (>= 2)")
    parser.add_argument("--moves", type=int, default=2000, help="CancelTasks, one per stream")
    parser.add_argument("--rate", type=float, default=200, help="moves per second")
    parser.add_argument("--rounds", type=int, default=1, help="latency rounds (modes alternate)")
    parser.add_argument("--threads", type=int, default=0,
                        help="toolnexus_serve --threads (default: DATABASE_THREADS)")  # fmt: skip
    parser.add_argument("--idle-streams", type=int, default=1000)
    parser.add_argument("--window", type=float, default=30, help="idle window, s")
    parser.add_argument("--baseline-window", type=float, default=30,
                        help="the idle window with no stream open, s (0: none)")  # fmt: skip
    parser.add_argument("--settle", type=float, default=12,
                        help="s before a window (pg_stat_database lags up to 10 s)")  # fmt: skip
    parser.add_argument("--heartbeat", type=float, default=0,
                        help="also the idle streams with this STREAM_HEARTBEAT, s")  # fmt: skip
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for every server and worker, e.g. "
                        "TOOLNEXUS_EVENT_FALLBACK_POLL_INTERVAL=60 (repeatable)")  # fmt: skip
    parser.add_argument("--pg-admin", default="postgres://postgres@127.0.0.1:5432/postgres",
                        help="where to create the benchmark's databases")  # fmt: skip
    parser.add_argument("--database", default="bench_wakeups", help="their names' prefix")
    parser.add_argument("--verbose", "-v", action="store_true", help="print each phase's steps")
    args = parser.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    if args.instances < 2:
        parser.error("--instances must be at least 2 (a move on one, the stream on another)")
    workdir = Path(tempfile.mkdtemp(prefix="tnx-wakeups-"))
    for line in machine():
        print(line)
    version = sql(args.pg_admin, "SHOW server_version")[0]
    print(f"PostgreSQL {version}; load average {os.getloadavg()}; logs in {workdir}")
    setup = prepare(args, workdir)
    try:
        try:
            import uvloop  # the servers' loop too: this client stamps every arrival
        except ImportError:
            return asyncio.run(run(setup))
        return uvloop.run(run(setup))
    except Exception:
        for log in sorted(workdir.glob("*.log")):
            print(f"--- {log.name} ---\n{log.read_text(errors='replace')[-1500:]}")
        raise
    finally:
        for name in setup.databases:
            try:
                drop(args.pg_admin, name)
            except Exception as exc:  # the numbers are printed already
                print(f"could not drop {name}: {exc}")
        if not os.environ.get("KEEP_LOGS"):
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
