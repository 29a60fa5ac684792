"""Stream capacity (issue 32): one ``manage.py toolnexus_serve --workers 2``
holding N concurrent SSE streams on idle Tasks, then every Task completes and
every stream must get its final event.

The server serves the testproject (``DEMO_AGENT=example``: the open endpoint,
no authentication; the django store on SQLite, or ``--database postgres``: a
database of its own on the PostgreSQL at 127.0.0.1:5432, dropped at the end)
and calls the fake model of benchmarks/loadclient.py, a process of its own,
whose ``[hold]`` calls wait until the benchmark opens its gate.

1. Warm-up: ``--warmup`` Tasks (``[sleep 1]``), a stream on each, to their end,
   so that the first requests' imports and caches are not counted as streams.
2. ``--streams`` N Tasks are sent (SendMessage, A2A v1.0, ``configuration:
   {returnImmediately: true}``), each ``[hold]``: its run takes the Task and
   waits on the model. Runs are bounded by ``MAX_RUNS`` per worker (256 by
   default): the first 2 x MAX_RUNS Tasks are ``working``, waiting on the
   model; the rest wait ``submitted`` for a slot, as they would on a busy
   server. Both are idle, not terminal. The fake model's count of waiting
   calls is printed.
3. Idle window with no stream: memory, descriptors, server CPU.
4. N streams (JSON-RPC ``SubscribeToTask``, header ``A2A-Version: 1.0``), one
   per Task, opened at ``--open-rate`` a second with at most ``--at-once``
   awaiting their first event (the Task); then the same idle window.
   Memory per idle stream = (RSS with N streams - RSS with none) / N.
5. The gate opens: every held model call is answered, the queued runs follow
   as slots free (``MAX_RUNS``), answered at once. Each stream's final event
   (TASK_STATE_COMPLETED) is stamped on arrival; its ``status.timestamp`` is
   when the server completed the Task. Reported: release to the last
   completion (the server's run throughput), the last completion to the last
   final event (the streams' fan-out; target <= 5 s), each stream's lag, and
   how many streams got their final event (must be all).

Every sample reads /proc: each worker's VmRSS and open descriptors, the whole
process group's RSS and CPU seconds (``servers.group_cpu_seconds``), the
workers' ``Max open files`` (toolnexus_serve raises its soft limit to the hard
one: serving/filelimit.py), and the load average. The client is this process:
raw asyncio sockets (loadclient.py ``Connection``, uvloop when installed),
sharing the cores with the server; it raises its own RLIMIT_NOFILE. Everything
listens on 127.0.0.1; every process started is stopped by its pid (its
process group). A stream lasts at most ``STREAM_MAX_SECONDS`` (300 s): the
phases after the first stream opens must fit in it.

    .venv/bin/python benchmarks/stream_capacity.py --streams 1000
    .venv/bin/python benchmarks/stream_capacity.py --streams 10000
    .venv/bin/python benchmarks/stream_capacity.py --streams 10000 --database postgres
    .venv/bin/python benchmarks/stream_capacity.py --streams 10000 \\
        --env TOOLNEXUS_MAX_RUNS=10000          # every Task running (a thread per model call)
    .venv/bin/python benchmarks/stream_capacity.py --streams 20 --window 0.5 --settle 0.2 \\
        --warmup 2 --json                       # the smoke test's sizes

Results: benchmarks/RESULTS.md ("Stream capacity (issue 32)").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from loadclient import Connection  # noqa: E402
from servers import machine, proc_stats  # noqa: E402
from versus_sdk import PG_ADMIN, V1, Server, pct, prepare_sqlite, rpc  # noqa: E402
from wakeups import FakeModel, drop, loop_lag, send_many, sql  # noqa: E402

PY = sys.executable
PATH = "/agent/"
WORKERS = 2
FINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
         "TASK_STATE_REJECTED"}  # fmt: skip
#: The longest wait for a stream's first event.
OPEN_DEADLINE = 30.0


# -- /proc -----------------------------------------------------------------------------------


def children(pid: int) -> list[int]:
    return sorted(child for child, fields in proc_stats() if int(fields[1]) == pid)


def group_pids(pgid: int) -> list[int]:
    return [pid for pid, fields in proc_stats() if int(fields[2]) == pgid]


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def fd_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def open_files_limit(pid: int) -> str:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return f"{soft}/{hard}"
    return "?"


@dataclass
class Sample:
    label: str
    streams: int
    load: float
    cpu: float  # the server's process group, CPU seconds so far
    workers: dict[int, tuple[int, int]]  # pid -> (VmRSS kB, open descriptors)
    group_kb: int

    @classmethod
    def take(cls, label: str, server: Server, workers: list[int], streams: int) -> Sample:
        assert server.proc is not None
        return cls(
            label, streams, os.getloadavg()[0], server.cpu(),
            {pid: (rss_kb(pid), fd_count(pid)) for pid in workers},
            sum(rss_kb(pid) for pid in group_pids(server.proc.pid)),
        )  # fmt: skip

    def row(self, workers: list[int]) -> str:
        rss = " | ".join(f"{self.workers[p][0] / 1024:.1f}" for p in workers)
        fds = " | ".join(str(self.workers[p][1]) for p in workers)
        return (
            f"| {self.label} | {self.streams} | {rss} | {self.group_kb / 1024:.1f} | {fds} "
            f"| {self.load:.2f} |"
        )


# -- streams ---------------------------------------------------------------------------------


def instant(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass
class Stream:
    """One SubscribeToTask stream: open (its first event, the Task), then its final event."""

    task_id: str
    port: int
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    first: bool = False
    events: int = 0
    final_at: float | None = None  # wall clock, on arrival
    completed_at: float | None = None  # the final status's timestamp (the server's clock)
    state: str | None = None
    error: str | None = None
    reader: asyncio.Task[None] | None = None
    conn: Connection | None = None

    async def follow(self) -> None:
        self.conn = Connection("127.0.0.1", self.port)
        try:
            body = rpc("SubscribeToTask", {"id": self.task_id})
            async for event in self.conn.events(PATH, body, V1):
                self.events += 1
                result = event.get("result") or {}
                if "error" in event:
                    self.error = f"error {str(event['error'])[:200]}"
                    return
                if "task" in result and not self.first:
                    self.first = True
                    self.opened.set()
                    continue
                update = result.get("statusUpdate")
                if update is not None and update["status"]["state"] in FINAL:
                    self.final_at = time.time()
                    self.state = update["status"]["state"]
                    self.completed_at = instant(update["status"].get("timestamp"))
                    return
            self.error = "the stream ended without its final event"
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.error = repr(exc)[:200]
        finally:
            self.conn.close()
            self.opened.set()

    @property
    def open(self) -> bool:
        return self.first and self.reader is not None and not self.reader.done()

    def close(self) -> None:
        if self.reader is not None and not self.reader.done():
            self.reader.cancel()
        if self.conn is not None:
            self.conn.close()


async def open_streams(streams: list[Stream], rate: float, at_once: int) -> float:
    """Start every stream, ``rate`` a second at most, ``at_once`` awaiting
    their first event at most; the seconds it took."""
    gate = asyncio.Semaphore(at_once)
    began = time.monotonic()

    async def one(i: int, stream: Stream) -> None:
        delay = began + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        async with gate:
            stream.reader = asyncio.create_task(stream.follow())
            try:
                await asyncio.wait_for(stream.opened.wait(), OPEN_DEADLINE)
            except TimeoutError:
                stream.error = stream.error or f"no first event within {OPEN_DEADLINE:g} s"

    await asyncio.gather(*(one(i, s) for i, s in enumerate(streams)))
    return time.monotonic() - began


async def fake_model_status(url: str, path: str = "held") -> dict[str, int]:
    """``/held`` (or ``/release``) of the fake model: its calls waiting at the gate."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    conn = Connection("127.0.0.1", port)
    try:
        return (await conn.post(f"/v1/{path}", {}, {})).json()  # type: ignore[no-any-return]
    finally:
        conn.close()


# -- the run -----------------------------------------------------------------------------------


def raise_own_files() -> tuple[int, int]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def prepare_database(args: argparse.Namespace, workdir: Path) -> str:
    if args.database == "sqlite":
        return prepare_sqlite(workdir / "capacity.sqlite3")
    name = args.pg_database
    drop(args.pg_admin, name)
    sql(args.pg_admin, f'CREATE DATABASE "{name}"')
    url = f"postgres://postgres@127.0.0.1:5432/{name}"
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "testproject.settings"}
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return f"{url}?application_name=tnx-stream-capacity"


def server_env(args: argparse.Namespace, url: str, model_url: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LLM_", "TOOLNEXUS_", "DATABASE_", "DEMO_", "DJANGO_"))
    }
    env.update(
        DATABASE_URL=url,
        DJANGO_SETTINGS_MODULE="testproject.settings",
        DEMO_AGENT="example",  # the open endpoint: no authentication classes
        TOOLNEXUS_STORE="django",
        TOOLNEXUS_LOG_LEVEL="WARNING",
        LLM_BASE_URL=model_url,
        LLM_RETRIES="0",
        LLM_TIMEOUT_MS="3600000",
    )
    env.update(item.split("=", 1) for item in args.env)
    return env


async def wait_held(model_url: str, expected: int, timeout: float) -> int:
    """Until ``expected`` model calls wait at the gate (or their count stops growing)."""
    deadline = time.monotonic() + timeout
    last, still = -1, 0
    while time.monotonic() < deadline:
        held = (await fake_model_status(model_url))["held"]
        if held >= expected:
            return held
        still = still + 1 if held == last else 0
        if still >= 10:  # 2 s without a new one
            return held
        last = held
        await asyncio.sleep(0.2)
    return last


async def window(seconds: float, server: Server) -> float:
    """The server's CPU seconds per second over an idle window."""
    cpu0, t0 = server.cpu(), time.monotonic()
    await asyncio.sleep(seconds)
    return (server.cpu() - cpu0) / max(1e-9, time.monotonic() - t0)


async def measure(args: argparse.Namespace, server: Server, fake: FakeModel) -> dict[str, Any]:
    assert server.proc is not None
    port = server.port
    out: dict[str, Any] = {"streams": args.streams}
    samples: list[Sample] = []
    t_start = time.monotonic()

    def note(what: str) -> None:
        print(f"  {time.monotonic() - t_start:7.1f} s  {what} (load {os.getloadavg()[0]:.2f})",
              flush=True)  # fmt: skip

    await server.ready()
    deadline = time.monotonic() + 30
    while len(workers := children(server.proc.pid)) < WORKERS:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{WORKERS} workers never came: {workers}")
        await asyncio.sleep(0.2)
    out["workers"] = workers
    out["open_files"] = {pid: open_files_limit(pid) for pid in workers}
    note(f"server ready: workers {workers}, open files (soft/hard) {out['open_files']}")
    samples.append(Sample.take("started", server, workers, 0))

    # 1. warm-up: both workers serve a few streams to their end.
    if args.warmup:
        ids = await send_many([port], args.warmup, "warm-up [sleep 1]")
        warm = [Stream(i, port) for i in ids]
        await open_streams(warm, args.open_rate, args.at_once)
        await asyncio.wait([s.reader for s in warm if s.reader], timeout=30)
        bad = [s.error for s in warm if s.state != "TASK_STATE_COMPLETED"]
        if bad:
            raise RuntimeError(f"{len(bad)} warm-up streams failed: {bad[0]}")
        note(f"warm-up: {len(warm)} streams to their end")

    # 2. N held Tasks.
    cpu0, t0 = server.cpu(), time.monotonic()
    ids = await send_many([port], args.streams, "[hold] capacity")
    out["send_s"] = time.monotonic() - t0
    out["send_cpu_s"] = server.cpu() - cpu0
    if len(ids) != args.streams:
        raise RuntimeError(f"only {len(ids)} of {args.streams} Tasks were sent")
    expected = min(args.streams, WORKERS * args.max_runs)
    out["held"] = await wait_held(fake.url, expected, 60)
    note(f"{len(ids)} Tasks sent in {out['send_s']:.1f} s; {out['held']} model calls held "
         f"(expected {expected}: MAX_RUNS {args.max_runs} a worker), the rest queued")  # fmt: skip

    # 3. idle, no stream.
    await asyncio.sleep(args.settle)
    samples.append(Sample.take("N idle Tasks, 0 streams", server, workers, 0))
    out["cpu_idle_no_streams"] = await window(args.window, server)
    note(f"idle window without streams: {out['cpu_idle_no_streams']:.3f} CPU s/s")

    # 4. N streams.
    streams = [Stream(i, port) for i in ids]
    cpu0 = server.cpu()
    try:
        out["open_s"] = await open_streams(streams, args.open_rate, args.at_once)
        out["open_cpu_s"] = server.cpu() - cpu0
        opened = sum(1 for s in streams if s.open)
        out["opened"] = opened
        failed = [s.error for s in streams if not s.first]
        note(f"{opened} streams open in {out['open_s']:.1f} s"
             + (f"; {len(failed)} failed, e.g. {failed[0]}" if failed else ""))  # fmt: skip
        out["open_errors"] = sorted({str(e) for e in failed})[:5]
        await asyncio.sleep(args.settle)
        samples.append(Sample.take("N idle Tasks, N streams", server, workers, opened))
        out["cpu_idle_streams"] = await window(args.window, server)
        out["still_open"] = sum(1 for s in streams if s.open)
        samples.append(Sample.take("... after the idle window", server, workers,
                                   out["still_open"]))  # fmt: skip
        note(
            f"idle window with streams: {out['cpu_idle_streams']:.3f} CPU s/s; "
            f"{out['still_open']} still open"
        )

        # 5. release; every stream's final event.
        stop = asyncio.Event()
        lags: list[float] = []
        lagging = asyncio.create_task(loop_lag(stop, lags))
        cpu0, rusage0 = server.cpu(), resource.getrusage(resource.RUSAGE_SELF)
        released = time.time()
        await fake_model_status(fake.url, "release")
        readers = [s.reader for s in streams if s.reader is not None and not s.reader.done()]
        if readers:
            await asyncio.wait(readers, timeout=args.deadline)
        out["complete_cpu_s"] = server.cpu() - cpu0
        rusage = resource.getrusage(resource.RUSAGE_SELF)
        out["client_cpu_s"] = (rusage.ru_utime - rusage0.ru_utime) + (
            rusage.ru_stime - rusage0.ru_stime
        )
        stop.set()
        await lagging
        out["client_lag_p99_ms"] = 1000 * pct(lags, 0.99)
        out["client_lag_max_ms"] = 1000 * max(lags, default=0)
        samples.append(Sample.take("completed", server, workers,
                                   sum(1 for s in streams if s.open)))  # fmt: skip
    finally:
        for s in streams:
            s.close()

    finals = [s for s in streams if s.final_at is not None]
    completed = [s for s in finals if s.state == "TASK_STATE_COMPLETED"]
    out["finals"] = len(finals)
    out["completed"] = len(completed)
    missed = [s for s in streams if s.state != "TASK_STATE_COMPLETED"]
    out["errors"] = sorted({str(s.error or "still open at the deadline") for s in missed})[:5]
    if missed:
        # Where the Tasks of the streams without their final event are (GetTask).
        conn = Connection("127.0.0.1", port)
        seen: dict[str, int] = {}
        examples = []
        for s in missed:
            task = (await conn.post(PATH, rpc("GetTask", {"id": s.task_id}), V1)).json()
            status = task.get("result", {}).get("status", {})
            seen[status.get("state", str(task)[:80])] = seen.get(status.get("state"), 0) + 1
            if len(examples) < 5:
                when = instant(status.get("timestamp"))
                examples.append(f"{s.task_id}: {status.get('state')} "
                                f"{when - released if when else 0:+.1f} s after the release, "
                                f"{s.events} events on its stream")  # fmt: skip
        conn.close()
        out["missed_tasks"] = seen
        out["missed_examples"] = examples
    stamped = [s for s in finals if s.completed_at is not None]
    if stamped:
        last_done = max(s.completed_at for s in stamped)  # type: ignore[type-var]
        last_final = max(s.final_at for s in finals)  # type: ignore[type-var]
        lag = [1000 * (s.final_at - s.completed_at) for s in stamped]  # type: ignore[operator]
        out["release_to_last_completion_s"] = last_done - released
        out["last_completion_to_last_final_s"] = last_final - last_done
        out["release_to_last_final_s"] = last_final - released
        out["lag_p50_ms"], out["lag_p99_ms"] = pct(lag, 0.5), pct(lag, 0.99)
        out["lag_max_ms"] = max(lag)
    note(f"{len(completed)}/{len(streams)} streams got TASK_STATE_COMPLETED")

    # Memory and descriptors per idle stream.
    before, after = samples[-4], samples[-3]
    n = max(1, after.streams)
    out["samples"] = [s.__dict__ for s in samples]
    out["rss_per_stream_kb"] = sum(after.workers[p][0] - before.workers[p][0] for p in workers) / n
    out["group_rss_per_stream_kb"] = (after.group_kb - before.group_kb) / n
    out["fds_per_stream"] = sum(after.workers[p][1] - before.workers[p][1] for p in workers) / n
    out["streams_per_worker"] = {p: after.workers[p][1] - before.workers[p][1] for p in workers}
    out["table"] = ["| phase | streams | " + " | ".join(f"worker {p} RSS MB" for p in workers)
                    + " | group RSS MB | " + " | ".join(f"worker {p} fds" for p in workers)
                    + " | load |",
                    "|---|---:|" + "---:|" * (2 * len(workers) + 1) + "---:|"]  # fmt: skip
    out["table"] += [s.row(workers) for s in samples]
    return out


def report(out: dict[str, Any], args: argparse.Namespace) -> None:
    print()
    for line in out["table"]:
        print(line)
    n = out["streams"]

    def s(key: str, fmt: str = ".2f") -> str:
        value = out.get(key)
        return "-" if value is None else format(value, fmt)

    print(f"""
| measure | value |
|---|---:|
| streams asked / open / still open after the idle window | {n} / {out.get("opened", 0)} / {out.get("still_open", 0)} |
| streams per worker (descriptors added) | {" / ".join(str(v) for v in out.get("streams_per_worker", {}).values())} |
| open files, soft/hard, per worker | {" ; ".join(out["open_files"].values())} |
| RSS per idle stream, workers' VmRSS (KB) | {s("rss_per_stream_kb", ".1f")} |
| RSS per idle stream, process group (KB) | {s("group_rss_per_stream_kb", ".1f")} |
| descriptors per idle stream | {s("fds_per_stream", ".3f")} |
| model calls held / MAX_RUNS per worker | {out.get("held")} / {args.max_runs} |
| send N Tasks: s (server CPU s) | {s("send_s", ".1f")} ({s("send_cpu_s", ".1f")}) |
| open N streams: s (server CPU s) | {s("open_s", ".1f")} ({s("open_cpu_s", ".1f")}) |
| server CPU, idle, no stream (s/s) | {s("cpu_idle_no_streams", ".3f")} |
| server CPU, idle, N streams (s/s) | {s("cpu_idle_streams", ".3f")} |
| release to the last Task's completion (s) | {s("release_to_last_completion_s")} |
| **last completion to the last final event (s)** | **{s("last_completion_to_last_final_s")}** |
| release to the last final event (s) | {s("release_to_last_final_s")} |
| stream lag, completion to its final event: p50 / p99 / max (ms) | {s("lag_p50_ms", ".0f")} / {s("lag_p99_ms", ".0f")} / {s("lag_max_ms", ".0f")} |
| **streams with their final event (completed)** | **{out.get("completed", 0)} / {n}** |
| server CPU from release to the last final (s) | {s("complete_cpu_s", ".1f")} |
| client CPU in that phase (s); its loop lag p99 / max (ms) | {s("client_cpu_s", ".1f")}; {s("client_lag_p99_ms", ".0f")} / {s("client_lag_max_ms", ".0f")} |
| server exit code on SIGTERM | {out.get("exit")} |""")  # noqa: E501
    if out.get("errors"):
        print(
            f"\nstreams without their final event: {out['errors']}; their Tasks: "
            f"{out.get('missed_tasks')}, e.g. {out.get('missed_examples')}"
        )


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    url = prepare_database(args, workdir)
    fake = FakeModel()
    argv = [PY, "manage.py", "toolnexus_serve", "127.0.0.1:{port}", "--workers", str(WORKERS)]
    server = Server("toolnexus_serve", argv, server_env(args, url, fake.url), PATH,
                    workdir / "server.log")  # fmt: skip
    server.start()
    out: dict[str, Any] = {}
    try:
        out = await measure(args, server, fake)
    finally:
        out["exit"] = await asyncio.to_thread(server.stop)
        fake.stop()
        log = (workdir / "server.log").read_text(errors="replace")
        lines = log.splitlines()
        out["log_lines"] = len(lines)
        out["log_warnings"] = [ln for ln in lines if " WARNING " in ln or " ERROR " in ln][:5]
        out["banner"] = [ln for ln in lines if ln.startswith(("toolnexus_serve:", "Open files",
                                                              "Tasks:"))]  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=1000, help="Tasks, one stream each")
    parser.add_argument("--open-rate", type=float, default=1000, help="streams opened a second")
    parser.add_argument("--at-once", type=int, default=100,
                        help="streams awaiting their first event at most")  # fmt: skip
    parser.add_argument("--window", type=float, default=20, help="each idle window, s")
    parser.add_argument("--settle", type=float, default=3, help="s before each sample")
    parser.add_argument("--warmup", type=int, default=32, help="warm-up streams (0: none)")
    parser.add_argument("--deadline", type=float, default=120,
                        help="s after the release for every final event")  # fmt: skip
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-admin", default=PG_ADMIN)
    parser.add_argument("--pg-database", default=f"tnx_stream_capacity_{os.getpid()}")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable of the server, e.g. "
                        "TOOLNEXUS_MAX_RUNS=10000 (repeatable)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    args = parser.parse_args()
    given = dict(item.split("=", 1) for item in args.env)
    args.max_runs = int(given.get("TOOLNEXUS_MAX_RUNS", 256))  # testproject/settings.py's default
    limit = raise_own_files()
    workdir = Path(tempfile.mkdtemp(prefix="tnx-capacity-"))
    for line in machine():
        print(line)
    print(f"database {args.database}; {args.streams} streams; client open files {limit}; "
          f"load average {os.getloadavg()}; logs in {workdir}", flush=True)  # fmt: skip
    try:
        try:
            import uvloop
        except ImportError:
            out = asyncio.run(run(args, workdir))
        else:
            out = uvloop.run(run(args, workdir))
    except Exception:
        log = workdir / "server.log"
        if log.exists():
            print(f"--- server.log ---\n{log.read_text(errors='replace')[-3000:]}")
        raise
    finally:
        if args.database == "postgres":
            try:
                drop(args.pg_admin, args.pg_database)
            except Exception as exc:  # the numbers are printed already
                print(f"could not drop {args.pg_database}: {exc}")
        if not os.environ.get("KEEP_LOGS"):
            shutil.rmtree(workdir, ignore_errors=True)
    report(out, args)
    print(
        f"\nserver: {out.get('banner')}; log: {out['log_lines']} lines, "
        f"warnings {out['log_warnings']}"
    )
    print(f"load average at the end {os.getloadavg()}")
    if args.json:
        print(json.dumps({k: v for k, v in out.items() if k != "table"}, default=str))
    ok = out.get("completed") == args.streams and out.get("exit") == 0
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
