"""Live streams (issue 33): what a streamed Task's live updates cost and how
soon they come -- the answer's chunks (v0.3 ``artifact-update``, coalesced
every ``STREAM_CHUNK_SECONDS``) between its moves, on ``manage.py
toolnexus_serve`` serving the testproject (``DEMO_AGENT=example``: the open
endpoint; the django store on a SQLite file, or ``--database postgres``: a
database of its own on the PostgreSQL at 127.0.0.1:5432, dropped at the
end; ``--database sqlite postgres``: both, one after the other).

The model is the fake of benchmarks/loadclient.py, a process of its own:
``[stream N R]`` in a message makes its answer ``"t0 t1 ... t<N-1>"``, N
tokens at R a second (one SSE delta per token when the call streams; the
whole text after N/R seconds when it does not, so the model's work is the
same either way); ``[wait S]`` delays the first token by S seconds; ``[tag
X]`` has it keep the ``time.monotonic()`` at which it wrote the first token
(``/firsts``) -- the clock is the machine's on Linux, so this process
compares it with its own.

Per database, each phase against servers of its own (each in a process
group of its own, stopped by its pid; everything on 127.0.0.1):

a. First chunk latency: from the fake's first token to this client's
   receipt of the first chunk (``artifact-update``, ``lastChunk`` false),
   over ``--latency-runs`` sequential runs of ``[stream 40 20]`` (after 2
   warm-up runs); median, p90, max. Same process: one ``toolnexus_serve
   --workers 1`` (B), ``message/stream`` on it. Across processes: a second
   one (A) on the same database; each Task is sent by ``message/stream`` to
   B and runs there; the client reads B's first event (the Task, for its id
   and SSE id), then CLOSES that connection (the run goes on), and opens
   ``tasks/resubscribe`` on A with ``Last-Event-ID`` of that event; A reads
   the run's updates from the database (woken by NOTIFY on PostgreSQL, by
   its 0.2 s poll on SQLite). ``[wait S]``, S from 0.5 to 0.68 s (the poll's
   phase differs run to run): A's stream is asked for before the first
   token (runs where it was asked for later are counted, "late").
   Target: <= 300 ms.
b. ``--runs`` (200) concurrent streamed runs, ``[stream 400 50]`` (8 s each),
   on one ``toolnexus_serve --workers 2``, after ``--warmup`` runs: every
   client assembles the answer from the chunks (``append`` false replaces,
   true appends) and checks it is the final artifact's text and the
   expected ``"t0 ... t399"``, and that the characters of all its chunks,
   joined, are exactly that text (no character lost or doubled); event ids
   must only grow. ``--reconnect-share`` of the clients (half) close their
   connection after k chunks (k from 1 to 10), wait ``--gap`` seconds and
   come back with ``tasks/resubscribe`` and ``Last-Event-ID`` (the last
   event they got) on the same server. Then the SAME workload on a server
   with live updates off (``TOOLNEXUS["STREAM_LIVE_UPDATES"] = False``, a
   settings module written into the run's temporary directory: the
   testproject reads no environment variable for it): the model is called
   without streaming, the clients see no chunk, only the final artifact
   (the reconnecting ones leave after the ``working`` status). Reported:
   server CPU seconds per Task (/proc, its whole process group, from the
   first send to the last final event; warm-up excluded), ON / OFF (target
   <= 1.5), chunk events per Task, model calls that streamed, failures, and
   on PostgreSQL the database writes per Task, per table, from
   ``pg_stat_user_tables`` (n_tup_ins + n_tup_upd + n_tup_del, before the
   runs and after the server stopped -- a session's counts reach the
   statistics when it ends, or within PostgreSQL's PGSTAT_IDLE_INTERVAL,
   10 s, when idle, which is why the "before" is read that long after the
   warm-up), transactions per Task (pg_stat_database, reads included) and
   the sessions opened. The servers' log warnings and tracebacks are
   counted by kind. ``--setting NAME=JSON`` sets a TOOLNEXUS setting of
   every server (the same settings module), to see what a knob changes.

Every read has a deadline. A lost or doubled character, a missing final
event, a reconnect that did not happen or failed, a server that did not
stop cleanly: each is a failure, counted, and the script exits 1. Timing
targets are reported, never failed on.

    .venv/bin/python benchmarks/live_streams.py                      # SQLite, ~3 minutes
    .venv/bin/python benchmarks/live_streams.py --database sqlite postgres --json
    .venv/bin/python benchmarks/live_streams.py --only load --runs 100 \\
        --setting STREAM_CHUNK_SECONDS=0.5                            # one phase, a knob
    .venv/bin/python benchmarks/live_streams.py --latency-runs 2 --latency-tokens 8 \\
        --runs 4 --tokens 12 --rate 20 --warmup 1 --deadline 30 --json  # the smoke test's

Results: benchmarks/RESULTS.md ("Live streams (issue 33)").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from loadclient import Connection, tokens  # noqa: E402
from servers import group_cpu_seconds, machine  # noqa: E402
from versus_sdk import PG_ADMIN, Server, pct, prepare_sqlite, rpc  # noqa: E402
from wakeups import FakeModel, db_url, drop, sessions, sql, transactions  # noqa: E402

PY = sys.executable
PATH = "/agent/"
TERMINAL = {"completed", "failed", "canceled", "rejected"}
LIVE_TABLE = "toolnexus_django_taskliveupdate"
#: A live update's SSE id.
LIVE_ID = re.compile(r"\d+\.0\.\d+")
#: The app's default STREAM_CHUNK_SECONDS: a chunk at most this often per run.
CHUNK_SECONDS = 0.1
#: PostgreSQL 15's PGSTAT_IDLE_INTERVAL (ms / 1000): how long an idle session
#: may keep its table counts before they reach pg_stat_user_tables.
PG_IDLE_FLUSH = 10.0
#: The latency phases' answer: 40 tokens at 20 a second.
LATENCY_TARGET_MS = 300.0
RATIO_TARGET = 1.5


def own_cpu() -> float:
    """This process's CPU seconds (the client's)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def v03_message(text: str) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }


def ordinal(event_id: str) -> tuple[int, ...]:
    """``"12.0.3"`` -> (12, 0, 3): later events have larger ordinals."""
    return tuple(int(x) for x in event_id.split("."))


def first_difference(got: str | None, want: str) -> str:
    if got is None:
        return "none"
    at = next(
        (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
        min(len(got), len(want)),
    )
    return f"{len(got)} chars for {len(want)}, first difference at {at}: {got[at : at + 20]!r}"


# -- one streamed Task, as its client sees it ---------------------------------------------


@dataclass
class Run:
    """A streamed Task's events over one connection or two (a reconnect)."""

    label: str
    expected: str
    live: bool
    started: float = field(default_factory=time.monotonic)
    task_id: str | None = None
    last_id: str | None = None
    last_ordinal: tuple[int, ...] | None = None
    text: str = ""  # as a client assembles it: append false replaces, true appends
    written: str = ""  # every chunk's characters, joined in order
    chunks: int = 0
    resets: int = 0  # chunks with append false
    final: str | None = None
    finals: int = 0
    state: str | None = None
    done: bool = False
    ended: float | None = None
    first_chunk_at: float | None = None
    planned_reconnect: bool = False
    reconnects: int = 0
    resubscribed_at: float | None = None
    error: str | None = None

    def feed(self, event_id: str | None, data: dict[str, Any], now: float) -> None:
        if "error" in data:
            self.error = f"error event {json.dumps(data['error'])[:240]}"
            return
        if event_id is None:
            self.error = f"an event without an id: {json.dumps(data)[:200]}"
            return
        key = ordinal(event_id)
        if self.last_ordinal is not None and key <= self.last_ordinal:
            self.error = f"event id {event_id} after {self.last_id}: repeated or out of order"
            return
        self.last_id, self.last_ordinal = event_id, key
        result = data.get("result") or {}
        kind = result.get("kind")
        if kind == "task":
            self.task_id = self.task_id or result["id"]
            self.state = result["status"]["state"]
        elif kind == "status-update":
            self.state = result["status"]["state"]
            if result.get("final") or self.state in TERMINAL:
                self.done, self.ended = True, now
        elif kind == "artifact-update":
            parts = result["artifact"].get("parts") or []
            piece = "".join(str(p["text"]) for p in parts if "text" in p)
            append = bool(result.get("append"))
            if result.get("lastChunk"):
                self.finals += 1
                self.final = (self.final or "") + piece if append else piece
                return
            self.chunks += 1
            if not LIVE_ID.fullmatch(event_id):
                self.error = f"a chunk's event id {event_id!r} is not <seq>.0.<n>"
                return
            if self.first_chunk_at is None:
                self.first_chunk_at = now
            if append:
                self.text += piece
            else:
                self.resets += 1
                self.text = piece
            self.written += piece
        else:
            self.error = f"unexpected event {json.dumps(result)[:200]}"

    def problems(self) -> list[str]:
        found = [self.error] if self.error else []
        if not self.done:
            found.append("no final status event")
        elif self.state != "completed":
            found.append(f"ended {self.state}")
        if self.finals != 1 or self.final != self.expected:
            found.append(
                f"{self.finals} final artifacts; text: "
                f"{first_difference(self.final, self.expected)}"
            )
        if self.live:
            if self.chunks == 0:
                found.append("no chunk with live updates on")
            elif self.text != self.expected:
                found.append(f"assembled text: {first_difference(self.text, self.expected)}")
            elif self.written != self.expected or self.resets != 1:
                found.append(
                    f"chunks' characters not exactly once ({self.resets} resets): "
                    f"{first_difference(self.written, self.expected)}"
                )
        elif self.chunks:
            found.append(f"{self.chunks} chunks with live updates off")
        if self.planned_reconnect and self.reconnects != 1:
            found.append("the planned reconnect did not happen")
        return found


Cut = Callable[[Run], bool]


async def follow(
    run: Run,
    port: int,
    method: str,
    params: dict[str, Any],
    headers: dict[str, str],
    deadline: float,
    cut: Cut | None = None,
) -> bool:
    """Read ``run``'s events on a connection of its own until its final one
    (False) or until ``cut`` says to leave (True: the connection is closed);
    an error, an early end or the ``deadline`` (monotonic) is ``run.error``."""
    conn = Connection("127.0.0.1", port)
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout_at(loop.time() + deadline - time.monotonic()):
            events = conn.events_with_ids(PATH, rpc(method, params), headers)
            async with contextlib.aclosing(events):
                async for event_id, data in events:
                    run.feed(event_id, data, time.monotonic())
                    if run.done or run.error:
                        return False
                    if cut is not None and cut(run):
                        return True
        run.error = run.error or f"{method}: the stream ended without the final event"
    except TimeoutError:
        run.error = run.error or f"{method}: no final event by the deadline"
    except Exception as exc:
        run.error = run.error or f"{method}: {exc!r}"[:300]
    finally:
        conn.close()
    return False


async def streamed(
    port: int,
    run: Run,
    text: str,
    deadline: float,
    cut: Cut | None = None,
    gap: float = 0.0,
) -> Run:
    """``message/stream`` of ``text``; with ``cut``, leave when it says so,
    wait ``gap`` s and come back on the same server with
    ``tasks/resubscribe`` and ``Last-Event-ID``."""
    run.planned_reconnect = cut is not None
    params = {"message": v03_message(text)}
    if not await follow(run, port, "message/stream", params, {}, deadline, cut):
        return run
    if gap:
        await asyncio.sleep(gap)
    if run.task_id is None or run.last_id is None:
        run.error = "left before the Task's first event"
        return run
    run.reconnects += 1
    headers = {"Last-Event-ID": run.last_id}
    await follow(run, port, "tasks/resubscribe", {"id": run.task_id}, headers, deadline)
    return run


# -- the fake model, the servers, the database ----------------------------------------------


async def fake_get(fake: FakeModel, what: str) -> dict[str, Any]:
    """``/firsts`` or ``/held`` of the fake model."""
    port = int(fake.url.rsplit(":", 1)[1].split("/")[0])
    conn = Connection("127.0.0.1", port)
    try:
        return (await conn.post(f"/v1/{what}", {}, {})).json()  # type: ignore[no-any-return]
    finally:
        conn.close()


@dataclass
class Database:
    kind: str  # sqlite | postgres
    url: str
    name: str = ""  # PostgreSQL's database name
    admin: str = PG_ADMIN  # PostgreSQL's admin database

    def server_url(self, role: str) -> str:
        if self.kind == "sqlite":
            return self.url
        return db_url(self.admin, self.name, f"tnx-live-streams-{role}")


def prepare_database(kind: str, args: argparse.Namespace, workdir: Path) -> Database:
    if kind == "sqlite":
        return Database(kind, prepare_sqlite(workdir / "live.sqlite3"))
    name = args.pg_database
    drop(args.pg_admin, name)
    sql(args.pg_admin, f'CREATE DATABASE "{name}"')
    url = db_url(args.pg_admin, name)
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "testproject.settings"}
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return Database(kind, url, name, args.pg_admin)


def server_env(
    args: argparse.Namespace, url: str, model_url: str, live: bool, workdir: Path
) -> dict[str, str]:
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
    overrides = dict(args.setting)
    if not live:
        overrides["STREAM_LIVE_UPDATES"] = False
    if overrides:
        # The testproject reads no environment variable for STREAM_LIVE_UPDATES
        # (nor for the --setting ones): a settings module of the run's own.
        module = f"live_streams_{'on' if live else 'off'}"
        lines = [
            f"TOOLNEXUS[{name!r}] = {value!r}  # noqa: F405" for name, value in overrides.items()
        ]
        (workdir / f"{module}.py").write_text(
            "from testproject.settings import *  # noqa: F403\n\n" + "\n".join(lines) + "\n"
        )
        env["DJANGO_SETTINGS_MODULE"] = module
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(workdir), env.get("PYTHONPATH", "")) if p
        )
    env.update(item.split("=", 1) for item in args.env)
    return env


class Servers:
    """The phase's servers: started, then each stopped by its pid (its group)."""

    def __init__(self, args: argparse.Namespace, db: Database, fake: FakeModel, workdir: Path):
        self.args, self.db, self.fake, self.workdir = args, db, fake, workdir
        self.exits: dict[str, int | None] = {}
        self.logs: list[Path] = []

    async def start(self, label: str, workers: int, live: bool = True) -> Server:
        argv = [PY, "manage.py", "toolnexus_serve", "127.0.0.1:{port}", "--workers", str(workers)]
        env = server_env(self.args, self.db.server_url(label), self.fake.url, live, self.workdir)
        log = self.workdir / f"{self.db.kind}-{label}.log"
        self.logs.append(log)
        server = Server(f"{self.db.kind} {label}", argv, env, PATH, log)
        server.start()
        try:
            await server.ready()
        except Exception:
            await self.stop(server)
            raise
        return server

    async def stop(self, *servers: Server) -> None:
        for server in servers:
            self.exits[server.name] = await asyncio.to_thread(server.stop)

    def warnings(self) -> dict[str, int]:
        """The servers' warnings, errors and tracebacks (by their exception
        line), each with how often it came; read a line at a time (a log can
        be large)."""
        seen: dict[str, int] = {}
        for log in self.logs:
            if not log.exists():
                continue
            in_traceback = False
            with log.open(errors="replace") as lines:
                for line in lines:
                    line = line.rstrip("\n")
                    if line.startswith("Traceback"):
                        in_traceback = True
                        continue
                    if in_traceback and not line.startswith(" "):
                        in_traceback = False
                        key = f"{log.name}: traceback: {line[:160]}"
                    elif " WARNING " in line or " ERROR " in line:
                        key = f"{log.name}: {line.split(' ', 2)[-1][:160]}"
                    else:
                        continue
                    seen[key] = seen.get(key, 0) + 1
        return seen


def table_writes(db: Database) -> dict[str, list[int]]:
    """Per table of the benchmark's database: [n_tup_ins, n_tup_upd, n_tup_del]."""
    import psycopg

    with psycopg.connect(db.server_url("stats"), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables"
        ).fetchall()
    return {str(r[0]): [int(r[1]), int(r[2]), int(r[3])] for r in rows}


def new_sessions(db: Database) -> int:
    """Sessions ever opened on the benchmark's database (pg_stat_database)."""
    row = sql(db.admin, "SELECT sessions FROM pg_stat_database WHERE datname = %s", [db.name])
    return int(row[0])


async def sessions_gone(db: Database, timeout: float = 15) -> int:
    """Until no session of the servers is on the database (their counts are
    then in the statistics); how many are still there."""
    deadline = time.monotonic() + timeout
    while True:
        left = await asyncio.to_thread(sessions, db.admin, db.name)
        if left == 0 or time.monotonic() > deadline:
            return int(left)
        await asyncio.sleep(0.1)


# -- a. first chunk latency -------------------------------------------------------------------


def summary_ms(values: list[float]) -> dict[str, Any]:
    ms = [1000 * v for v in values]
    return {
        "n": len(ms),
        "median_ms": statistics.median(ms) if ms else None,
        "p90_ms": pct(ms, 0.9) if ms else None,
        "max_ms": max(ms, default=None),
    }


def latency_text(args: argparse.Namespace, label: str, i: int, wait: float = 0) -> str:
    """A latency run's message; with ``wait``, the first token comes ``wait`` s
    and (i % 10) x 20 ms after the model call: spread over a 0.2 s poll, so a
    poll's phase is not the same in every run."""
    wait = wait + (i % 10) * 0.02 if wait else 0
    pause = f" [wait {wait:g}]" if wait else ""
    return (
        f"latency {label} {i} [stream {args.latency_tokens} {args.latency_rate:g}]{pause} "
        f"[tag {label}-{i}-{uuid.uuid4().hex[:8]}]"
    )


def tag_of(text: str) -> str:
    return text.rsplit("[tag ", 1)[1].rstrip("]")


async def latency_same(args: argparse.Namespace, b: Server, fake: FakeModel) -> dict[str, Any]:
    expected = "".join(tokens(args.latency_tokens))
    deadline_s = args.latency_tokens / args.latency_rate + 30
    latencies, runs = [], []
    for i in range(-2, args.latency_runs):  # two warm-up runs first
        text = latency_text(args, "same", i)
        run = Run(f"same {i}", expected, live=True)
        await streamed(b.port, run, text, time.monotonic() + deadline_s)
        if i < 0:
            continue
        runs.append(run)
        firsts = await fake_get(fake, "firsts")
        if run.first_chunk_at is not None and tag_of(text) in firsts:
            latencies.append(run.first_chunk_at - firsts[tag_of(text)])
    return {**summary_ms(latencies), **failures(runs)}


async def latency_across(
    args: argparse.Namespace, a: Server, b: Server, fake: FakeModel
) -> dict[str, Any]:
    """Sent to B and run there; B's connection closed after its first event;
    read on A by ``tasks/resubscribe`` with that event's id."""
    expected = "".join(tokens(args.latency_tokens))
    deadline_s = args.latency_tokens / args.latency_rate + args.cross_wait + 30
    latencies, runs, late = [], [], 0
    for i in range(-2, args.latency_runs):
        text = latency_text(args, "across", i, args.cross_wait)
        run = Run(f"across {i}", expected, live=True)
        run.planned_reconnect = True
        deadline = time.monotonic() + deadline_s
        params = {"message": v03_message(text)}
        left = await follow(
            run, b.port, "message/stream", params, {}, deadline, cut=lambda r: r.task_id is not None
        )
        if left and run.task_id and run.last_id:
            run.reconnects += 1
            run.resubscribed_at = time.monotonic()
            headers = {"Last-Event-ID": run.last_id}
            await follow(run, a.port, "tasks/resubscribe", {"id": run.task_id}, headers, deadline)
        elif not run.error:
            run.error = "B's stream ended before the Task's first event"
        if i < 0:
            continue
        runs.append(run)
        firsts = await fake_get(fake, "firsts")
        first = firsts.get(tag_of(text))
        if run.first_chunk_at is not None and first is not None:
            latencies.append(run.first_chunk_at - first)
            if run.resubscribed_at is not None and run.resubscribed_at > first:
                late += 1
    return {**summary_ms(latencies), "late": late, **failures(runs)}


def failures(runs: list[Run]) -> dict[str, Any]:
    bad = [(r.label, p) for r in runs for p in r.problems()]
    return {
        "runs": len(runs),
        "failed_runs": len({label for label, _ in bad}),
        "failures": len(bad),
        "failure_examples": [f"{label}: {p}" for label, p in bad[:5]],
        # Which runs went wrong how (a run may count in several).
        "hung": sum(not r.done for r in runs),
        "completed_with_a_wrong_answer": sum(
            r.done and r.state == "completed" and r.final != r.expected for r in runs
        ),
        # Chunks whose characters, joined, are not the start of the answer: a
        # character lost or doubled on the way (a cut-short stream is not counted).
        "chunks_not_a_prefix": sum(
            r.live and not (r.written == r.text and r.expected.startswith(r.written)) for r in runs
        ),
        "chunks_per_task": statistics.mean(r.chunks for r in runs) if runs else 0,
        "reconnects_planned": sum(r.planned_reconnect for r in runs),
        "reconnects_done": sum(r.reconnects for r in runs),
    }


# -- b. many concurrent streamed runs ------------------------------------------------------------


def reconnects(i: int, share: float) -> bool:
    """Whether client ``i`` leaves mid-stream: ``share`` of them, spread evenly."""
    return int((i + 1) * share) > int(i * share)


async def load(
    args: argparse.Namespace, server: Server, fake: FakeModel, live: bool, db: Database
) -> dict[str, Any]:
    """``--warmup`` runs, then ``--runs`` concurrent ones, measured."""
    expected = "".join(tokens(args.tokens))
    answer_s = args.tokens / args.rate
    warm = [Run(f"warm-up {i}", "".join(tokens(20)), live) for i in range(args.warmup)]
    await asyncio.gather(
        *(
            streamed(server.port, r, f"warm-up {i} [stream 20 100]", time.monotonic() + 60)
            for i, r in enumerate(warm)
        )
    )
    bad = [p for r in warm for p in r.problems()]
    if bad:
        raise RuntimeError(f"{len(bad)} warm-up problems, e.g. {bad[0]}")
    out: dict[str, Any] = {"live": live}
    if db.kind == "postgres":
        # Idle sessions hand their counts over within PGSTAT_IDLE_INTERVAL.
        await asyncio.sleep(PG_IDLE_FLUSH + 1)
        before = await asyncio.to_thread(table_writes, db)
        xacts0 = await asyncio.to_thread(transactions, db.admin, db.name)
        sessions0 = await asyncio.to_thread(new_sessions, db)
    # A reconnecting client leaves after k chunks (live updates on) or at the
    # working status (off); k from 1 to 10, at most half the chunks expected.
    chunk_s = float(dict(args.setting).get("STREAM_CHUNK_SECONDS", CHUNK_SECONDS)) or 0.01
    kmax = max(1, min(10, int(answer_s / chunk_s) // 2))
    runs, jobs = [], []
    streamed0 = (await fake_get(fake, "held"))["streamed"]
    out["load_average"] = os.getloadavg()[0]
    fake0, own0 = group_cpu_seconds(fake.proc.pid), own_cpu()
    cpu0, t0 = server.cpu(), time.monotonic()
    deadline = t0 + answer_s + args.deadline
    for i in range(args.runs):
        run = Run(f"run {i}", expected, live)
        runs.append(run)
        cut: Cut | None = None
        if reconnects(i, args.reconnect_share):
            k = 1 + i % kmax
            if live:
                cut = lambda r, k=k: r.chunks >= k  # noqa: E731
            else:
                cut = lambda r: r.state == "working"  # noqa: E731
        text = f"load {i} [stream {args.tokens} {args.rate:g}]"
        jobs.append(streamed(server.port, run, text, deadline, cut, args.gap))
    await asyncio.gather(*jobs)
    out["wall_s"] = time.monotonic() - t0
    out["cpu_s"] = server.cpu() - cpu0
    out["fake_model_cpu_s"] = group_cpu_seconds(fake.proc.pid) - fake0
    out["client_cpu_s"] = own_cpu() - own0
    out["model_calls_streamed"] = (await fake_get(fake, "held"))["streamed"] - streamed0
    out["cpu_ms_per_task"] = 1000 * out["cpu_s"] / max(1, len(runs))
    durations = [r.ended - r.started for r in runs if r.ended is not None]
    out["run_s_median"] = statistics.median(durations) if durations else None
    out["run_s_max"] = max(durations, default=None)
    chunks = [r.chunks for r in runs]
    out["chunks_min"], out["chunks_max"] = min(chunks, default=0), max(chunks, default=0)
    out.update(failures(runs))
    if db.kind == "postgres":
        out["_before"], out["_xacts0"], out["_sessions0"] = before, xacts0, sessions0
    return out


async def load_phase(
    args: argparse.Namespace, servers: Servers, fake: FakeModel, live: bool
) -> dict[str, Any]:
    db = servers.db
    server = await servers.start("on" if live else "off", 2, live)
    try:
        out = await load(args, server, fake, live, db)
    finally:
        await servers.stop(server)
    out["exit"] = servers.exits[server.name]
    if db.kind == "postgres":
        out["sessions_left"] = await sessions_gone(db)
        n = max(1, out["runs"])
        # Sessions and transactions first: reading the tables opens one more.
        sessions1 = await asyncio.to_thread(new_sessions, db)
        out["new_sessions"] = sessions1 - out.pop("_sessions0")
        xacts = await asyncio.to_thread(transactions, db.admin, db.name)
        out["transactions_per_task"] = (xacts - out.pop("_xacts0")) / n
        after = await asyncio.to_thread(table_writes, db)
        before = out.pop("_before")
        writes = {}
        for table in sorted(after):
            delta = [a - b for a, b in zip(after[table], before.get(table, [0, 0, 0]), strict=True)]
            if any(delta) or table == LIVE_TABLE:
                writes[table] = {
                    "ins": delta[0] / n,
                    "upd": delta[1] / n,
                    "del": delta[2] / n,
                    "total": sum(delta) / n,
                }
        out["writes_per_task"] = writes
        out["writes_per_task_total"] = sum(w["total"] for w in writes.values())
    return out


# -- the run --------------------------------------------------------------------------------------


async def one_database(
    kind: str, args: argparse.Namespace, fake: FakeModel, workdir: Path
) -> dict[str, Any]:
    db = prepare_database(kind, args, workdir)
    servers = Servers(args, db, fake, workdir)
    out: dict[str, Any] = {"database": kind}

    def note(what: str) -> None:
        print(f"  [{kind}] {what} (load {os.getloadavg()[0]:.2f})", flush=True)

    if {"same", "across"} & set(args.only):
        b = await servers.start("B", 1)
        a = None
        try:
            if "same" in args.only:
                out["same"] = await latency_same(args, b, fake)
                note(f"same process: {out['same']}")
            if "across" in args.only:
                a = await servers.start("A", 1)
                out["across"] = await latency_across(args, a, b, fake)
                note(f"across processes: {out['across']}")
        finally:
            await servers.stop(*(s for s in (a, b) if s is not None))
    if "load" in args.only:
        out["on"] = await load_phase(args, servers, fake, True)
        note(f"live updates on: {brief(out['on'])}")
        out["off"] = await load_phase(args, servers, fake, False)
        note(f"live updates off: {brief(out['off'])}")
        off = out["off"]["cpu_ms_per_task"]
        out["cpu_ratio"] = out["on"]["cpu_ms_per_task"] / off if off else None
    out["exits"] = servers.exits
    warnings = servers.warnings()
    out["log_warnings"] = dict(sorted(warnings.items(), key=lambda kv: -kv[1])[:10])
    return out


def brief(phase: dict[str, Any]) -> str:
    keys = ("cpu_ms_per_task", "chunks_per_task", "failures", "reconnects_done", "wall_s")
    return ", ".join(
        f"{k} {phase[k]:.1f}" if isinstance(phase[k], float) else f"{k} {phase[k]}" for k in keys
    )


def total_failures(results: dict[str, Any]) -> int:
    n = 0
    for db in results["databases"].values():
        for phase in ("same", "across", "on", "off"):
            if phase in db:
                n += db[phase]["failures"]
        n += sum(1 for code in db["exits"].values() if code != 0)
    return n


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    def f(value: Any, fmt: str = ".0f") -> str:
        return "-" if value is None else format(value, fmt)

    for kind, db in results["databases"].items():
        print(f"\n### {kind}\n")
        print(
            "| first chunk latency (fake's first token -> client) | runs | median ms "
            "| p90 ms | max ms | failures |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        for phase, label in (
            ("same", "same process (B, --workers 1)"),
            ("across", "across processes (run on B, read on A)"),
        ):
            if phase in db:
                p = db[phase]
                extra = f" ({p['late']} late)" if "late" in p else ""
                print(
                    f"| {label}{extra} | {p['n']} | {f(p['median_ms'])} | {f(p['p90_ms'])} "
                    f"| {f(p['max_ms'])} | {p['failures']} |"
                )
        if "on" in db:
            on, off = db["on"], db["off"]
            print(
                f"\n{args.runs} concurrent runs, [stream {args.tokens} {args.rate:g}], "
                f"{args.reconnect_share:.0%} reconnecting, --workers 2\n"
            )
            print("| | live updates ON | OFF |\n|---|---:|---:|")
            rows = [
                ("server CPU s", "cpu_s", ".1f"),
                ("server CPU ms per Task", "cpu_ms_per_task", ".1f"),
                ("chunk events per Task (mean)", "chunks_per_task", ".1f"),
                ("chunk events per Task, min", "chunks_min", "d"),
                ("chunk events per Task, max", "chunks_max", "d"),
                ("model calls streamed", "model_calls_streamed", "d"),
                ("reconnects planned", "reconnects_planned", "d"),
                ("reconnects done", "reconnects_done", "d"),
                ("**failures**", "failures", "d"),
                ("runs without their final event (hung)", "hung", "d"),
                ("runs completed with a wrong answer", "completed_with_a_wrong_answer", "d"),
                ("runs whose chunks lost or doubled a character", "chunks_not_a_prefix", "d"),
                ("run send -> final, median s", "run_s_median", ".2f"),
                ("run send -> final, max s", "run_s_max", ".2f"),
                ("wall s", "wall_s", ".1f"),
                ("fake model CPU s (not the server's)", "fake_model_cpu_s", ".1f"),
                ("this client's CPU s", "client_cpu_s", ".1f"),
                ("load average at the start", "load_average", ".2f"),
                ("transactions per Task (reads included)", "transactions_per_task", ".1f"),
                ("database sessions opened (whole phase)", "new_sessions", "d"),
                ("database writes per Task (rows)", "writes_per_task_total", ".1f"),
                ("server exit code", "exit", ""),
            ]
            for label, key, fmt in rows:
                if key in on:
                    print(f"| {label} | {f(on.get(key), fmt)} | {f(off.get(key), fmt)} |")
            print(f"| **CPU ON / OFF** | {f(db['cpu_ratio'], '.2f')} | |")
            if "writes_per_task" in on:
                print("\n| table: rows written per Task (ins / upd / del) | ON | OFF |")
                print("|---|---:|---:|")
                for table in sorted(set(on["writes_per_task"]) | set(off["writes_per_task"])):

                    def cell(w: dict[str, float] | None) -> str:
                        if w is None:
                            return "0"
                        return (
                            f"{w['total']:.2f} ({w['ins']:.2f} / {w['upd']:.2f} / {w['del']:.2f})"
                        )

                    print(
                        f"| {table} | {cell(on['writes_per_task'].get(table))} "
                        f"| {cell(off['writes_per_task'].get(table))} |"
                    )
        for phase in ("same", "across", "on", "off"):
            if db.get(phase, {}).get("failure_examples"):
                print(f"\n{phase} failures, e.g.: {db[phase]['failure_examples']}")
        if db["log_warnings"]:
            print(f"\nserver log warnings: {db['log_warnings']}")
    print()
    for kind, db in results["databases"].items():
        lat = [db[p]["median_ms"] for p in ("same", "across") if db.get(p, {}).get("median_ms")]
        if lat:
            met = all(v <= LATENCY_TARGET_MS for v in lat)
            print(
                f"{kind}: first chunk latency medians {', '.join(f'{v:.0f}' for v in lat)} ms: "
                f"target <= {LATENCY_TARGET_MS:.0f} ms {'met' if met else 'NOT met'}"
            )
        if db.get("cpu_ratio") is not None:
            met = db["cpu_ratio"] <= RATIO_TARGET
            print(
                f"{kind}: CPU ON/OFF {db['cpu_ratio']:.2f}: target <= {RATIO_TARGET} "
                f"{'met' if met else 'NOT met'}"
            )
    print(f"failures: {results['failures']}")


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    fake = FakeModel()
    results: dict[str, Any] = {"databases": {}}
    try:
        for kind in args.database:
            results["databases"][kind] = await one_database(kind, args, fake, workdir)
    finally:
        fake.stop()
    return results


def setting(text: str) -> tuple[str, Any]:
    name, _, value = text.partition("=")
    return name, json.loads(value)


def code_digest() -> str:
    """A digest of the server's code as it is now (others may be editing it):
    runs with the same digest ran the same toolnexus_django."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "toolnexus_django").rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", nargs="+", choices=["sqlite", "postgres"], default=["sqlite"])
    parser.add_argument(
        "--only",
        nargs="+",
        choices=["same", "across", "load"],
        default=["same", "across", "load"],
        help="phases to run",
    )
    parser.add_argument("--latency-runs", type=int, default=20)
    parser.add_argument("--latency-tokens", type=int, default=40)
    parser.add_argument("--latency-rate", type=float, default=20, help="tokens a second")
    parser.add_argument(
        "--cross-wait",
        type=float,
        default=0.5,
        help="[wait S] of the cross-process runs: A subscribes before it",
    )
    parser.add_argument("--runs", type=int, default=200, help="concurrent streamed runs")
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--rate", type=float, default=50, help="tokens a second")
    parser.add_argument("--reconnect-share", type=float, default=0.5)
    parser.add_argument("--gap", type=float, default=0.3, help="s between leaving and coming back")
    parser.add_argument("--warmup", type=int, default=8, help="warm-up runs before the load")
    parser.add_argument(
        "--deadline",
        type=float,
        default=120,
        help="s past the answer's length for every final event",
    )
    parser.add_argument("--pg-admin", default=PG_ADMIN)
    parser.add_argument("--pg-database", default=f"tnx_live_streams_{os.getpid()}")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable of the servers (repeatable)",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        type=setting,
        metavar="NAME=JSON",
        help="a TOOLNEXUS setting of every server, e.g. STREAM_CHUNK_SECONDS=0.5 (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tnx-live-streams-"))
    digest = code_digest()
    for line in machine():
        print(line)
    print(
        f"databases {args.database}; phases {args.only}; settings {dict(args.setting)}; "
        f"server code digest {digest}; load average {os.getloadavg()}; logs in {workdir}",
        flush=True,
    )
    try:
        try:
            import uvloop
        except ImportError:
            results = asyncio.run(run(args, workdir))
        else:
            results = uvloop.run(run(args, workdir))
    except Exception:
        for log in sorted(workdir.glob("*.log")):
            print(f"--- {log.name} ---\n{log.read_text(errors='replace')[-2000:]}")
        raise
    finally:
        if "postgres" in args.database:
            try:
                drop(args.pg_admin, args.pg_database)
            except Exception as exc:  # the numbers are printed already
                print(f"could not drop {args.pg_database}: {exc}")
        if not os.environ.get("KEEP_LOGS"):
            shutil.rmtree(workdir, ignore_errors=True)
    results["failures"] = total_failures(results)
    results["code_digest"] = digest
    results["args"] = vars(args)
    report(results, args)
    print(f"load average at the end {os.getloadavg()}")
    if args.json:
        print(json.dumps(results, default=str))
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
