"""End to end: how many Tasks per second does ``toolnexus_serve`` finish, and how
fast does GetTask answer meanwhile? With 1, 2 and 4 worker processes, on
PostgreSQL and on SQLite, with a model that answers at once and one that takes
200 ms.

Not a test. Each cell of the table starts from an empty migrated database (a
copy of a template), starts a fake model (tests/fakes' FakeLLM, in a process of
its own so it never competes with the load for a GIL) and
``manage.py toolnexus_serve 127.0.0.1:<port> --workers W``. N client threads
(real HTTP/1.1, keep-alive) each loop: SendMessage, poll GetTask every
``--poll`` seconds until the Task is final, check its answer, send the next.
After a warm-up, the measured window counts the Tasks that completed in it and
the latency of every GetTask issued in it. The clients then finish the Task in
hand, the server is stopped with SIGTERM, the fake reports how many model calls
each message got (a message run twice shows up), and the database is checked
for Tasks left ``submitted`` or ``working``.

    .venv/bin/python benchmarks/throughput.py                          # everything (~3 min a round)
    .venv/bin/python benchmarks/throughput.py --db sqlite --workers 1 2 --latency 0
    .venv/bin/python benchmarks/throughput.py --clients 32 --latency 200 --repeat 3
    .venv/bin/python benchmarks/throughput.py --conn-max-age 60      # persistent connections

PostgreSQL: 127.0.0.1:5432 as user postgres (``--pg``); scratch databases
``toolnexus_bench_tp`` (the migrated template) and ``toolnexus_bench_tp_cell``
are created and dropped. SQLite: scratch files in a temporary directory.
Loopback only; everything started here is stopped here.

Results are written down in benchmarks/RESULTS.md ("Throughput").
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Shared with the server benchmark beside this file (its directory is on
# sys.path when this runs as a script).
from servers import free_port, group_cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
MANAGE = str(ROOT / "manage.py")
CARD_PATH = "/agent/.well-known/agent-card.json"
ENDPOINT = "/agent/"

TEMPLATE_DB = "toolnexus_bench_tp"
CELL_DB = "toolnexus_bench_tp_cell"

#: What a message carries, and what the fake answers it with.
MARKER = re.compile(r"\[tp (\d+-\d+)\]")
FINAL = ("completed", "failed", "canceled", "rejected", "input-required", "auth-required")


# -- the fake model, in a child process -----------------------------------------


def fake_model_main(latency: float) -> None:
    """``throughput.py --fake-model SECONDS``: serve a FakeLLM that answers
    ``[tp KEY]`` with ``r KEY`` after ``latency`` seconds; print its URL; on
    stdin's end, print how many calls each key got (as JSON) and stop."""
    sys.path.insert(0, str(ROOT))
    from tests.fakes import llm
    from tests.fakes.llm import FakeLLM, Text, first_user_text

    # socketserver's default listen backlog is 5: with dozens of runs calling
    # at once the kernel drops SYNs, and each dropped one costs the caller a
    # 1 s retransmit -- a tail that belongs to the fake, not to the server.
    llm._Server.request_queue_size = 256

    calls: Counter[str] = Counter()
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> Text:
        if latency > 0:
            time.sleep(latency)  # each request has a handler thread of its own
        match = MARKER.search(first_user_text(body, "openai"))
        key = match.group(1) if match else "?"
        with lock:
            calls[key] += 1
        return Text(f"r {key}")

    fake = FakeLLM(style="openai")
    fake.respond = respond
    with fake:
        print(fake.url, flush=True)
        sys.stdin.read()
    with lock:
        print(json.dumps(dict(calls)), flush=True)


class FakeModel:
    def __init__(self, latency: float, log: Path) -> None:
        self._err = log.open("wb")
        self.proc = subprocess.Popen(
            [PY, __file__, "--fake-model", str(latency)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.close()
            raise RuntimeError(f"the fake model did not start (see {log})")

    def calls(self) -> Counter[str]:
        """Stop the fake; return the model calls it answered, per message key."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        line = self.proc.stdout.readline()
        self.close()
        return Counter(json.loads(line)) if line.strip() else Counter()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._err.close()


# -- databases -------------------------------------------------------------------


def migrate(url: str) -> None:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "testproject.settings"}
    subprocess.run([PY, MANAGE, "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=120)


class Postgres:
    name = "PostgreSQL"

    def __init__(self, server: str) -> None:
        self.server = server.rstrip("/")

    def _admin(self) -> Any:
        import psycopg

        return psycopg.connect(f"{self.server}/postgres", autocommit=True)

    def prepare(self) -> None:
        with self._admin() as c:
            c.execute(f"DROP DATABASE IF EXISTS {CELL_DB} WITH (FORCE)")
            c.execute(f"DROP DATABASE IF EXISTS {TEMPLATE_DB} WITH (FORCE)")
            c.execute(f"CREATE DATABASE {TEMPLATE_DB}")
        migrate(f"{self.server}/{TEMPLATE_DB}")

    def fresh(self) -> str:
        with self._admin() as c:
            c.execute(f"DROP DATABASE IF EXISTS {CELL_DB} WITH (FORCE)")
            c.execute(f"CREATE DATABASE {CELL_DB} TEMPLATE {TEMPLATE_DB}")
        return f"{self.server}/{CELL_DB}"

    def states(self, url: str) -> Counter[str]:
        import psycopg

        with psycopg.connect(url) as c:
            rows = c.execute(
                "SELECT state, count(*) FROM toolnexus_django_taskrecord GROUP BY state"
            ).fetchall()
        return Counter({state: n for state, n in rows})

    def version(self) -> str:
        with self._admin() as c:
            return str(c.execute("SHOW server_version").fetchone()[0])

    def cleanup(self) -> None:
        with self._admin() as c:
            c.execute(f"DROP DATABASE IF EXISTS {CELL_DB} WITH (FORCE)")
            c.execute(f"DROP DATABASE IF EXISTS {TEMPLATE_DB} WITH (FORCE)")


class Sqlite:
    name = "SQLite"

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / "sqlite"
        self.template = self.dir / "template.sqlite3"
        self.cells = 0

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        migrate(f"sqlite:///{self.template}")

    def fresh(self) -> str:
        self.cells += 1
        for old in self.dir.glob("cell-*"):
            old.unlink()
        cell = self.dir / f"cell-{self.cells}.sqlite3"
        shutil.copyfile(self.template, cell)
        return f"sqlite:///{cell}"

    def states(self, url: str) -> Counter[str]:
        with sqlite3.connect(url.removeprefix("sqlite:///")) as c:
            rows = c.execute(
                "SELECT state, count(*) FROM toolnexus_django_taskrecord GROUP BY state"
            ).fetchall()
        return Counter({state: n for state, n in rows})

    def version(self) -> str:
        return sqlite3.sqlite_version

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# -- the server ------------------------------------------------------------------


class Server:
    """``manage.py toolnexus_serve`` in a session of its own."""

    def __init__(self, workers: int, threads: int, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.workers = workers
        self.log = log
        self._out = log.open("wb")
        self.proc = subprocess.Popen(
            [PY, MANAGE, "toolnexus_serve", f"127.0.0.1:{self.port}",
             "--workers", str(workers), "--threads", str(threads)],
            cwd=ROOT, env=env, stdout=self._out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}")
            booted = self.output().count("Booting worker with pid") >= self.workers
            if booted:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                    conn.request("GET", CARD_PATH)
                    if conn.getresponse().status == 200:
                        conn.close()
                        return
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer within {timeout}s")
            time.sleep(0.05)

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM, then wait; the exit code (None if it had to be killed)."""
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                return None
        finally:
            try:  # whatever is left of the group (workers of a master that died)
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self._out.close()


# -- the clients ------------------------------------------------------------------


class Rpc:
    """JSON-RPC over one keep-alive HTTP/1.1 connection (reopened when the
    server has closed it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn: http.client.HTTPConnection | None = None
        self.ids = 0
        self.reconnects = 0

    def call(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float]:
        self.ids += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            t0 = time.perf_counter()
            try:
                self.conn.request("POST", ENDPOINT, body, {"Content-Type": "application/json"})
                resp = self.conn.getresponse()
                payload = resp.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A keep-alive connection the server closed: once more, on a new one.
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
                self.reconnects += 1
                continue
            elapsed = time.perf_counter() - t0
            if resp.status != 200:
                raise RuntimeError(f"{method}: HTTP {resp.status}: {payload[:200]!r}")
            if resp.getheader("Connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
            reply = json.loads(payload)
            if "result" not in reply:
                raise RuntimeError(f"{method}: {str(reply)[:200]}")
            return reply["result"], elapsed
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


@dataclass
class Samples:
    done: list[tuple[float, float]] = field(default_factory=list)  # (finished at, e2e s)
    gets: list[tuple[float, float]] = field(default_factory=list)  # (sent at, latency s)
    sends: list[tuple[float, float]] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    sent_keys: list[str] = field(default_factory=list)
    reconnects: int = 0


def client_loop(
    index: int, port: int, poll: float, stop_at: float, samples: Samples, task_timeout: float
) -> None:
    rpc = Rpc(port)
    n = 0
    try:
        while time.monotonic() < stop_at:
            key = f"{index}-{n}"
            n += 1
            message = {
                "role": "user",
                "messageId": f"m-{key}",
                "parts": [{"kind": "text", "text": f"[tp {key}] Please answer."}],
            }
            t0 = time.monotonic()
            try:
                task, took = rpc.call("SendMessage", {"message": message})
            except Exception as exc:
                samples.bad.append(f"SendMessage: {exc}"[:200])
                time.sleep(0.1)
                continue
            samples.sends.append((t0, took))
            samples.sent_keys.append(key)
            task_id = task["id"]
            state = task["status"]["state"]
            while state not in FINAL:
                time.sleep(poll)
                t1 = time.monotonic()
                try:
                    task, took = rpc.call("GetTask", {"id": task_id})
                except Exception as exc:
                    samples.bad.append(f"GetTask: {exc}"[:200])
                    time.sleep(0.1)
                    continue
                samples.gets.append((t1, took))
                state = task["status"]["state"]
                if state not in FINAL and time.monotonic() - t0 > task_timeout:
                    state = f"still {state} after {task_timeout:.0f}s"
                    break
            finished = time.monotonic()
            texts = [
                p.get("text") for a in task.get("artifacts") or () for p in a.get("parts") or ()
            ]
            if state != "completed" or texts != [f"r {key}"]:
                samples.bad.append(f"{task_id}: {state} {texts}"[:200])
                continue
            samples.done.append((finished, finished - t0))
    finally:
        samples.reconnects += rpc.reconnects
        rpc.close()


# -- one cell ---------------------------------------------------------------------


@dataclass
class Cell:
    db: str
    latency_ms: float
    workers: int
    clients: int


@dataclass
class Result:
    cell: Cell
    tasks_per_s: float = 0.0
    e2e_ms: tuple[float, float] = (0.0, 0.0)  # median, p99
    get_ms: tuple[float, float] = (0.0, 0.0)
    send_ms: float = 0.0
    gets_per_task: float = 0.0
    cpu_ms_per_task: float = 0.0
    bad: int = 0
    twice: int = 0
    left: int = 0
    log_problems: int = 0
    exit_code: int | None = 0
    start_s: float = 0.0  # until the server answered
    stop_s: float = 0.0  # SIGTERM until it exited
    drain_s: float = 0.0  # the window's end until every client finished its Task
    notes: list[str] = field(default_factory=list)


def percentiles(values: list[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1000, p99 * 1000


def run_cell(
    cell: Cell, db: Postgres | Sqlite, args: argparse.Namespace, workdir: Path, round_: int = 1
) -> Result:
    result = Result(cell)
    slug = f"{cell.db.lower()}-{cell.latency_ms:g}ms-{cell.workers}w-{cell.clients}c-r{round_}"
    url = db.fresh()
    fake = FakeModel(cell.latency_ms / 1000, workdir / f"{slug}-fake.log")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "TOOLNEXUS_"))}
    env.update({
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "DATABASE_CONN_MAX_AGE": str(args.conn_max_age),
        "TOOLNEXUS_STORE": "django",
        "TOOLNEXUS_LOG_LEVEL": args.log_level,
        "LLM_BASE_URL": fake.url,
        "LLM_STYLE": "openai",
        "LLM_RETRIES": "0",
        "PYTHONUNBUFFERED": "1",
    })  # fmt: skip
    try:
        server = Server(cell.workers, args.threads, env, workdir / f"{slug}-serve.log")
    except BaseException:
        fake.calls()
        raise
    samples = Samples()
    measure_from = stop_at = time.monotonic()
    try:
        t0 = time.monotonic()
        try:
            server.wait_ready()
            result.start_s = time.monotonic() - t0
        except RuntimeError as exc:
            result.notes.append(f"FAILED: {exc} (see {server.log})")
            return result
        measure_from = time.monotonic() + args.warmup
        stop_at = measure_from + args.duration
        threads = [
            threading.Thread(
                target=client_loop,
                args=(i, server.port, args.poll, stop_at, samples, args.task_timeout),
                name=f"client-{i}",
                daemon=True,
            )
            for i in range(cell.clients)
        ]
        for t in threads:
            t.start()
        time.sleep(max(0.0, measure_from - time.monotonic()))
        cpu0 = group_cpu_seconds(server.proc.pid)
        time.sleep(max(0.0, stop_at - time.monotonic()))
        cpu1 = group_cpu_seconds(server.proc.pid)
        for t in threads:  # each finishes the Task in hand
            t.join(args.task_timeout + 5)
        result.drain_s = time.monotonic() - stop_at
        if any(t.is_alive() for t in threads):
            result.notes.append("a client did not finish")
    finally:
        t0 = time.monotonic()
        result.exit_code = server.stop()
        result.stop_s = time.monotonic() - t0
        calls = fake.calls()
        result.bad = len(samples.bad)

    window = stop_at - measure_from
    done = [e2e for at, e2e in samples.done if measure_from <= at <= stop_at]
    gets = [took for at, took in samples.gets if measure_from <= at <= stop_at]
    sends = [took for at, took in samples.sends if measure_from <= at <= stop_at]
    result.tasks_per_s = len(done) / window
    result.e2e_ms = percentiles(done)
    result.get_ms = percentiles(gets)
    result.send_ms = percentiles(sends)[0]
    result.gets_per_task = len(gets) / max(1, len(done))
    result.cpu_ms_per_task = (cpu1 - cpu0) * 1000 / max(1, len(done))
    result.bad = len(samples.bad)
    result.twice = sum(1 for key in samples.sent_keys if calls.get(key, 0) > 1)
    missing = sum(1 for key in samples.sent_keys if calls.get(key, 0) == 0)
    states = db.states(url)
    result.left = states["submitted"] + states["working"]
    output = server.output()
    problems = [
        line
        for line in output.splitlines()
        if " ERROR " in line or " WARNING " in line or "Traceback" in line
    ]
    result.log_problems = len(problems)
    if samples.bad:
        result.notes.append(f"first failure: {samples.bad[0]}")
    if missing:
        result.notes.append(f"{missing} sent messages never reached the model")
    if samples.reconnects:
        result.notes.append(f"{samples.reconnects} reconnects")
    if problems:
        result.notes.append(f"log: {problems[0][:160]}")
    return result


# -- report -----------------------------------------------------------------------


def machine(dbs: list[Postgres | Sqlite]) -> list[str]:
    import django
    import gunicorn

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        ram = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, IndexError, ValueError):
        pass
    versions = ", ".join(f"{db.name} {db.version()}" for db in dbs)
    return [
        f"nproc {os.cpu_count()}, CPU {cpu}, RAM {ram}, {platform.system()} {platform.release()}",
        f"Python {platform.python_version()}, Django {django.get_version()}, "
        f"gunicorn {gunicorn.__version__}, {versions}",
    ]


HEADER = (
    "| database | model | workers | clients | tasks/s | min-max | e2e median ms | e2e p99 ms "
    "| GetTask median ms | GetTask p99 ms | SendMessage median ms | GetTask/task "
    "| server CPU ms/task | bad | ran twice | left | log warnings | note |"
)


def row(results: list[Result]) -> str:
    ordered = sorted(results, key=lambda r: r.tasks_per_s)
    r = ordered[len(ordered) // 2]
    c = r.cell
    spread = f"{ordered[0].tasks_per_s:.0f}-{ordered[-1].tasks_per_s:.0f}"
    notes = [n for res in results for n in res.notes]
    exits = {res.exit_code for res in results}
    if exits != {0}:
        notes.append(f"exit on SIGTERM: {', '.join(str(e) for e in sorted(exits, key=str))}")
    return (
        f"| {c.db} | {c.latency_ms:g} ms | {c.workers} | {c.clients} | {r.tasks_per_s:.1f} "
        f"| {spread} | {r.e2e_ms[0]:.0f} | {r.e2e_ms[1]:.0f} | {r.get_ms[0]:.1f} "
        f"| {r.get_ms[1]:.1f} | {r.send_ms:.1f} | {r.gets_per_task:.1f} "
        f"| {r.cpu_ms_per_task:.1f} | {sum(x.bad for x in results)} "
        f"| {sum(x.twice for x in results)} | {sum(x.left for x in results)} "
        f"| {sum(x.log_problems for x in results)} | {'; '.join(notes)} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--db", nargs="+", choices=["postgres", "sqlite"], default=["postgres", "sqlite"]
    )
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument(
        "--latency",
        nargs="+",
        type=float,
        default=[0, 200],
        help="the fake model's latency, ms (default: 0 200)",
    )
    parser.add_argument(
        "--clients",
        nargs="+",
        type=int,
        default=[16],
        help="concurrent client threads (default 16)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=8,
        help="toolnexus_serve --threads (HTTP threads per worker; default 8)",
    )
    parser.add_argument("--duration", type=float, default=8, help="measured seconds per cell")
    parser.add_argument("--warmup", type=float, default=2, help="warm-up seconds per cell")
    parser.add_argument(
        "--poll",
        type=float,
        default=0.05,
        help="seconds between a client's GetTask polls (default 0.05)",
    )
    parser.add_argument(
        "--repeat",
        "-r",
        type=int,
        default=1,
        help="rounds over all cells, interleaved; the table shows the median",
    )
    parser.add_argument("--task-timeout", type=float, default=30, help=argparse.SUPPRESS)
    parser.add_argument("--log-level", default="INFO", help="TOOLNEXUS_LOG_LEVEL of the server")
    parser.add_argument(
        "--pg",
        default="postgres://postgres@127.0.0.1:5432",
        help="PostgreSQL server URL, without a database name",
    )
    parser.add_argument(
        "--conn-max-age",
        type=int,
        default=0,
        help="the server's DATABASE_CONN_MAX_AGE (default 0, the testproject's default: "
        "a new database connection per request and per run; 60 keeps them)",
    )
    parser.add_argument("--fake-model", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fake_model is not None:
        fake_model_main(args.fake_model)
        return 0
    args.duration = min(args.duration, 12.0)  # a cell stays within ~15 s with start and stop

    workdir = Path(tempfile.mkdtemp(prefix="tnx-tp-"))
    dbs: dict[str, Postgres | Sqlite] = {}
    if "postgres" in args.db:
        dbs["PostgreSQL"] = Postgres(args.pg)
    if "sqlite" in args.db:
        dbs["SQLite"] = Sqlite(workdir)

    cells = [
        Cell(name, latency, workers, clients)
        for name in dbs
        for latency in args.latency
        for clients in args.clients
        for workers in args.workers
    ]
    runs: dict[int, list[Result]] = {i: [] for i in range(len(cells))}
    try:
        for line in machine(list(dbs.values())):
            print(line)
        print(
            f"{len(cells)} cells x {args.repeat} round(s): {args.warmup:g}s warm-up + "
            f"{args.duration:g}s measured each; GetTask poll every {args.poll * 1000:g} ms; "
            f"toolnexus_serve --threads {args.threads}, WORKER_THREADS 8; "
            f"DATABASE_CONN_MAX_AGE {args.conn_max_age}; logs in {workdir}",
            flush=True,
        )
        for db in dbs.values():
            db.prepare()
        for round_ in range(1, args.repeat + 1):
            print(f"round {round_}/{args.repeat} (load average {os.getloadavg()[0]:.2f})")
            for i, cell in enumerate(cells):
                t0 = time.monotonic()
                result = run_cell(cell, dbs[cell.db], args, workdir, round_)
                runs[i].append(result)
                print(
                    f"  {cell.db:<10} {cell.latency_ms:>4g} ms  {cell.workers}w "
                    f"{cell.clients}c  {result.tasks_per_s:6.1f} tasks/s  GetTask "
                    f"{result.get_ms[0]:5.1f}/{result.get_ms[1]:6.1f} ms  bad {result.bad} "
                    f"twice {result.twice} left {result.left}  "
                    f"({time.monotonic() - t0:.1f}s: server up in {result.start_s:.1f}s, clients "
                    f"done {result.drain_s:.1f}s after the window, server stopped in "
                    f"{result.stop_s:.1f}s)",
                    flush=True,
                )
    finally:
        for db in dbs.values():
            try:
                db.cleanup()
            except Exception as exc:  # report, but never hide the table
                print(f"cleanup of {db.name} failed: {exc}", file=sys.stderr)

    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}\n")
    print(HEADER)
    print(
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    )
    for i in range(len(cells)):
        print(row(runs[i]))
    failed = any(r.bad or r.twice or r.left for rs in runs.values() for r in rs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
