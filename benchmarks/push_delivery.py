"""Push notification delivery: how late does a Task's event reach its webhook,
and does every one arrive, at 100 Tasks a second?

Not a test. Three processes of ours on 127.0.0.1, each in a process group of
its own:

* a **webhook receiver** (this script with ``--receiver``, asyncio): it takes
  every POST, notes ``time.time()`` when the whole body is in, answers 200 at
  once, and hands its records back when the run is over;
* the **fake model** (benchmarks/loadclient.py): it answers at once;
* ``manage.py toolnexus_serve`` with no flags but the address (one worker per
  core, the django store), ``TOOLNEXUS_PUSH_ALLOWED_HOSTS=127.0.0.1``.

The driver (asyncio, loadclient's raw sockets) sends ``--rate`` Tasks a second
for ``--seconds`` seconds, open loop (each send is due at ``t0 + i / rate``
whatever the earlier ones did; at most ``--concurrency`` in flight, so a
server that falls behind shows up as fewer Tasks/s achieved). Each is a v1.0
``SendMessage`` with ``returnImmediately`` and one inline
``taskPushNotificationConfig`` pointing at the receiver. It then waits (up to
``--drain`` s) until every Task's completed notification is in.

Latency of a notification = its arrival at the receiver - its event's own
``status.timestamp`` (RFC 3339 ms, written by the server when it made the
move; same machine, same clock). An artifact update carries no timestamp: it
is paired with the status update of the same event (its id is ``S-1.k`` where
that one's is ``S``). Lost = a Task missing its working, artifact or completed
notification; duplicates = the same (taskId, X-A2A-Event-Id) received twice.

    .venv/bin/python benchmarks/push_delivery.py                  # 100 Tasks/s, 20 s, SQLite
    .venv/bin/python benchmarks/push_delivery.py --pg             # PostgreSQL 127.0.0.1:5432
    .venv/bin/python benchmarks/push_delivery.py --rate 5 --seconds 2 --json
    .venv/bin/python benchmarks/push_delivery.py --py-spy 10      # sample one worker (needs py-spy)

PostgreSQL: user postgres, a scratch database ``toolnexus_bench_push``
(``--pg-database``), created and dropped. SQLite: a scratch file. Everything
started here is stopped here, on errors and Ctrl-C too.

Results are written down in benchmarks/RESULTS.md ("Push notification delivery").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from loadclient import Connection  # noqa: E402
from servers import machine  # noqa: E402
from versus_sdk import PY, V1, Server, message, pct, rpc  # noqa: E402

PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
STATES = ("TASK_STATE_WORKING", "TASK_STATE_COMPLETED")


# -- the webhook receiver, in a process of its own ----------------------------------------


def receiver_main() -> None:
    """``push_delivery.py --receiver``: print the port; record every POST; answer
    ``GET /stats`` with counts; on stdin's end print the records (JSON) and stop."""
    records: list[list[Any]] = []  # [arrival, event id, task id, kind, state, timestamp]
    completed: set[str] = set()

    def note(arrival: float, event_id: str, raw: bytes) -> None:
        try:
            body = json.loads(raw)
        except ValueError:
            records.append([arrival, event_id, "", "bad", "", ""])
            return
        if "statusUpdate" in body:
            update = body["statusUpdate"]
            status = update.get("status") or {}
            state = str(status.get("state") or "")
            records.append([arrival, event_id, update.get("taskId", ""), "status", state,
                            status.get("timestamp", "")])  # fmt: skip
            if state == "TASK_STATE_COMPLETED":
                completed.add(str(update.get("taskId")))
        elif "artifactUpdate" in body:
            update = body["artifactUpdate"]
            records.append([arrival, event_id, update.get("taskId", ""), "artifact", "", ""])
        else:
            records.append([arrival, event_id, "", "other", "", ""])

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method = lines[0].split(" ", 1)[0]
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length") or 0))
                arrival = time.time()
                if method == "POST":
                    note(arrival, headers.get("x-a2a-event-id", ""), body)
                    out = b"{}"
                else:
                    out = json.dumps({"received": len(records), "completed": len(completed)})
                    out = out.encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(out)}\r\n\r\n".encode()
                    + out
                )
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        server.close()
        json.dump(records, sys.stdout)
        sys.stdout.flush()

    asyncio.run(main())


class Receiver:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [PY, __file__, "--receiver"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, start_new_session=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}/hook"

    async def stats(self) -> dict[str, int]:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            writer.write(b"GET /stats HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n")
            await writer.drain()
            raw = await reader.read()
        finally:
            writer.close()
        return dict(json.loads(raw.split(b"\r\n\r\n", 1)[1]))

    def records(self) -> list[list[Any]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        out = self.proc.stdout.read()
        self.proc.wait(30)
        return list(json.loads(out)) if out else []

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


# -- databases and the server --------------------------------------------------------------


def prepare(args: argparse.Namespace, workdir: Path) -> str:
    if args.pg:
        import psycopg

        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {args.pg_database} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {args.pg_database}")
        url = f"postgres://postgres@127.0.0.1:5432/{args.pg_database}"
    else:
        url = f"sqlite:///{workdir / 'push.sqlite3'}"
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "testproject.settings"}
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return url


def drop_pg(args: argparse.Namespace) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {args.pg_database} WITH (FORCE)")


def make_server(args: argparse.Namespace, url: str, model_url: str, workdir: Path) -> Server:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "TOOLNEXUS_"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "DATABASE_URL": url,
        "LLM_BASE_URL": model_url,
        "LLM_RETRIES": "0",
        "LLM_TIMEOUT_MS": "120000",
        "TOOLNEXUS_STORE": "django",
        "TOOLNEXUS_LOG_LEVEL": "WARNING",
        "TOOLNEXUS_PUSH_ALLOWED_HOSTS": "127.0.0.1",
    })  # fmt: skip
    argv = [PY, "manage.py", "toolnexus_serve", "127.0.0.1:{port}"]
    if args.workers:
        argv += ["--workers", str(args.workers)]
    return Server("toolnexus", argv, env, "/agent/", workdir / "server.log")


def delivery_log(url: str) -> dict[str, Any]:
    """What the server's own delivery log says: attempts by outcome, configs
    disabled, configs with events still undelivered."""
    queries = {
        "outcomes": "SELECT outcome, count(*) FROM toolnexus_django_pushdelivery GROUP BY outcome",
        "disabled": "SELECT count(*) FROM toolnexus_django_pushconfig"
        " WHERE disabled_at IS NOT NULL",
        "behind": "SELECT count(*) FROM toolnexus_django_pushconfig c"
        " JOIN toolnexus_django_taskrecord t ON t.id = c.task_id"
        " WHERE c.delivered_seq < t.event_seq",
        "states": "SELECT state, count(*) FROM toolnexus_django_taskrecord GROUP BY state",
    }
    if url.startswith("sqlite"):
        import sqlite3

        conn: Any = sqlite3.connect(url.removeprefix("sqlite:///"))
    else:
        import psycopg

        conn = psycopg.connect(url)
    try:
        got = {name: conn.execute(sql).fetchall() for name, sql in queries.items()}
    finally:
        conn.close()
    return {
        "attempts": {str(k): int(v) for k, v in got["outcomes"]},
        "configs_disabled": int(got["disabled"][0][0]),
        "configs_behind": int(got["behind"][0][0]),
        "task_states": {str(k): int(v) for k, v in got["states"]},
    }


def worker_pids(pid: int) -> list[int]:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(c) for c in children]


# -- the load ------------------------------------------------------------------------------------


async def drive(args: argparse.Namespace, server: Server, hook: Receiver) -> dict[str, Any]:
    total = int(args.rate * args.seconds)
    free: asyncio.Queue[Connection] = asyncio.Queue()
    for _ in range(args.concurrency):
        free.put_nowait(Connection("127.0.0.1", server.port))
    sent: dict[str, float] = {}  # task id -> when its reply came
    send_times: list[float] = []
    failures: Counter[str] = Counter()
    late = 0  # sends that went out more than 100 ms after they were due
    pending: set[asyncio.Task[None]] = set()

    async def send(i: int, conn: Connection) -> None:
        params = {
            "message": message(f"push {i}"),
            "configuration": {
                "returnImmediately": True,
                "taskPushNotificationConfig": {"url": hook.url, "token": "t"},
            },
        }
        t = time.monotonic()
        try:
            reply = await asyncio.wait_for(
                conn.post(server.path, rpc("SendMessage", params), V1), args.send_timeout
            )
            task = reply.json().get("result", {}).get("task") if reply.status == 200 else None
            if task and task.get("id"):
                sent[str(task["id"])] = time.time()
                send_times.append(time.monotonic() - t)
            else:
                failures[f"HTTP {reply.status}: {reply.body[:120]!r}"] += 1
        except Exception as exc:
            conn.close()
            failures[type(exc).__name__] += 1
        finally:
            free.put_nowait(conn)

    cpu0 = server.cpu()
    t0 = time.monotonic()
    for i in range(total):
        due = t0 + i / args.rate
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        conn = await free.get()
        if time.monotonic() - due > 0.1:
            late += 1
        job = asyncio.create_task(send(i, conn))
        pending.add(job)
        job.add_done_callback(pending.discard)
    send_window = time.monotonic() - t0
    if pending:
        await asyncio.gather(*pending)
    sent_in = time.monotonic() - t0

    # Drain: until every Task sent has its completed notification, or --drain.
    deadline = time.monotonic() + args.drain
    stats = await hook.stats()
    while stats["completed"] < len(sent) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        stats = await hook.stats()
    drained_in = time.monotonic() - t0
    await asyncio.sleep(args.grace)  # late duplicates, if any
    cpu = server.cpu() - cpu0
    while not free.empty():
        free.get_nowait().close()
    return {
        "target": total,
        "sent": sent,
        "send_failures": dict(failures),
        "late_sends": late,
        "send_window_s": send_window,
        "sent_in_s": sent_in,
        "drained_in_s": drained_in,
        "send_p50_ms": 1000 * pct(send_times, 0.5),
        "send_p99_ms": 1000 * pct(send_times, 0.99),
        "server_cpu_s": cpu,
    }


def parse_ts(value: str) -> float | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None


def analyse(sent: dict[str, float], records: list[list[Any]]) -> dict[str, Any]:
    seen: Counter[tuple[str, str]] = Counter()
    by_task: dict[str, list[list[Any]]] = defaultdict(list)
    for rec in records:
        seen[(rec[2], rec[1])] += 1
        by_task[rec[2]].append(rec)
    duplicates = [
        {"task": t, "event_id": e, "times": n} for (t, e), n in seen.items() if n > 1
    ]  # fmt: skip

    latencies: dict[str, list[float]] = {"working": [], "artifact": [], "completed": []}
    kinds: Counter[str] = Counter()
    missing: dict[str, list[str]] = {"working": [], "artifact": [], "completed": []}
    out_of_order = 0
    for task_id in sent:
        recs = by_task.get(task_id, [])
        stamp = {r[1]: parse_ts(r[5]) for r in recs if r[3] == "status"}
        has = Counter()
        arrivals = []
        for arrival, event_id, _, kind, state, _ts in recs:
            if kind == "status":
                name = state.removeprefix("TASK_STATE_").lower()
                at = stamp.get(event_id)
            else:
                name = kind
                # "S-1.k": paired with the status update "S" of the same event.
                head = event_id.split(".", 1)[0]
                at = stamp.get(str(int(head) + 1)) if head.isdigit() else None
            has[name] += 1
            kinds[name] += 1
            arrivals.append((arrival, event_id))
            if at is not None and name in latencies:
                latencies[name].append(arrival - at)
        order = [e for _, e in sorted(arrivals)]
        if order != sorted(order, key=_seq_key):
            out_of_order += 1
        for name in missing:
            if not has[name]:
                missing[name].append(task_id)
    strangers = sum(1 for t in by_task if t not in sent)
    every = [x for values in latencies.values() for x in values]
    arrivals_all = sorted(r[0] for r in records if r[2] in sent)
    span = (arrivals_all[-1] - arrivals_all[0]) if len(arrivals_all) > 1 else float("nan")
    # While Tasks were still coming (first to last SendMessage reply).
    first, last = (min(sent.values()), max(sent.values())) if sent else (0.0, 0.0)
    meanwhile = sum(1 for a in arrivals_all if first <= a <= last)

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "n": len(values),
            "median_ms": 1000 * pct(values, 0.5),
            "p95_ms": 1000 * pct(values, 0.95),
            "p99_ms": 1000 * pct(values, 0.99),
            "max_ms": 1000 * max(values) if values else float("nan"),
        }

    return {
        "notifications": len(records),
        "by_kind": dict(kinds),
        "latency": {"all": summary(every), **{k: summary(v) for k, v in latencies.items()}},
        "delivered_per_s": len(arrivals_all) / span if span == span and span > 0 else 0.0,
        "delivered_per_s_while_sending": meanwhile / (last - first) if last > first else 0.0,
        "lost": {k: len(v) for k, v in missing.items()},
        "lost_tasks": {k: v[:10] for k, v in missing.items() if v},
        "duplicates": len(duplicates),
        "duplicate_examples": duplicates[:10],
        "tasks_out_of_order": out_of_order,
        "from_unknown_tasks": strangers,
    }


def _seq_key(event_id: str) -> tuple[float, int]:
    head, _, k = event_id.partition(".")
    try:
        # "S-1.k" (an artifact of event S) comes after S-1 and before S.
        return (float(head) + 0.5, int(k)) if k else (float(head), 0)
    except ValueError:
        return (float("inf"), 0)


# -- the run -----------------------------------------------------------------------------------


def py_spy(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes] | None:
    spy = shutil.which("py-spy") or str(Path(PY).parent / "py-spy")
    if not Path(spy).exists():
        print("no py-spy: .venv/bin/pip install py-spy", file=sys.stderr)
        return None
    return subprocess.Popen(
        [spy, "record", "--pid", str(pid), "-d", str(int(seconds)), "-r", "100", "-f", "raw",
         "-o", str(out), "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    url = prepare(args, workdir)
    fake = subprocess.Popen(
        [PY, str(HERE / "loadclient.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    hook: Receiver | None = None
    server: Server | None = None
    spy: subprocess.Popen[bytes] | None = None
    try:
        assert fake.stdout is not None
        model_url = fake.stdout.readline().strip()
        hook = Receiver()
        server = make_server(args, url, model_url, workdir)
        server.start()
        await server.ready()
        assert server.proc is not None
        await asyncio.sleep(1.0)  # every worker forked and ready
        workers = worker_pids(server.proc.pid)
        load0 = os.getloadavg()[0]
        driving = asyncio.create_task(drive(args, server, hook))
        if args.py_spy and workers:
            await asyncio.sleep(args.py_spy_after)
            spy = py_spy(workers[0], args.py_spy, Path(args.py_spy_out))
        driven = await driving
        load1 = os.getloadavg()[0]
        workers = worker_pids(server.proc.pid) or workers  # all forked by now
        records = hook.records()
        sent = driven.pop("sent")
        result = analyse(sent, records)
        result.update(driven)
        result["tasks_sent"] = len(sent)
        # Sends are due every 1/rate s: n of them take n/rate s when all is well.
        result["tasks_per_s"] = len(sent) / (driven["sent_in_s"] + 1 / args.rate)
        result["server_cpu_ms_per_task"] = 1000 * driven["server_cpu_s"] / max(1, len(sent))
        result["workers"] = len(workers)
        result["load_average"] = [round(load0, 2), round(load1, 2)]
        result["database"] = "postgresql" if args.pg else "sqlite"
        result["server_log"] = delivery_log(url)
        if spy is not None:
            spy.wait(args.py_spy + 30)
            result["py_spy"] = args.py_spy_out
    finally:
        if spy is not None and spy.poll() is None:
            spy.kill()
        code = server.stop() if server is not None else None
        if hook is not None:
            hook.stop()
        if fake.poll() is None:
            assert fake.stdin is not None
            fake.stdin.close()
            try:
                fake.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(fake.pid, signal.SIGKILL)
        if server is not None and server.log.exists():
            tail = server.log.read_text(errors="replace").strip().splitlines()[-20:]
        else:
            tail = []
    result["server_exit"] = code
    result["server_log_tail"] = tail
    return result


def show(r: dict[str, Any]) -> None:
    print(f"\ndatabase {r['database']}, {r['workers']} workers, load average "
          f"{r['load_average'][0]} -> {r['load_average'][1]}")  # fmt: skip
    print(f"Tasks: target {r['target']}, sent {r['tasks_sent']} in {r['sent_in_s']:.1f} s = "
          f"{r['tasks_per_s']:.1f} Tasks/s achieved (late sends {r['late_sends']}, failed "
          f"{sum(r['send_failures'].values())}); SendMessage p50/p99 "
          f"{r['send_p50_ms']:.1f}/{r['send_p99_ms']:.1f} ms")  # fmt: skip
    print(f"notifications {r['notifications']} {r['by_kind']}, "
          f"{r['delivered_per_s']:.1f}/s delivered ({r['delivered_per_s_while_sending']:.1f}/s "
          f"while sending); all drained "
          f"{r['drained_in_s']:.1f} s after the first send")  # fmt: skip
    print(f"server CPU {r['server_cpu_ms_per_task']:.1f} ms per Task")
    print(f"\n{'latency (ms)':<14}{'n':>7}{'median':>10}{'p95':>10}{'p99':>10}{'max':>10}")
    for name, s in r["latency"].items():
        print(f"{name:<14}{s['n']:>7}{s['median_ms']:>10.1f}{s['p95_ms']:>10.1f}"
              f"{s['p99_ms']:>10.1f}{s['max_ms']:>10.1f}")  # fmt: skip
    lost = r["lost"]
    print(f"\nlost (Tasks missing it): working {lost['working']}, artifact "
          f"{lost['artifact']}, completed {lost['completed']}; duplicates "
          f"{r['duplicates']}; Tasks out of order {r['tasks_out_of_order']}")  # fmt: skip
    if r["lost_tasks"]:
        print(f"  e.g. {r['lost_tasks']}")
    if r["duplicate_examples"]:
        print(f"  e.g. {r['duplicate_examples']}")
    log = r["server_log"]
    print(f"server's delivery log: {log['attempts']}, configs disabled "
          f"{log['configs_disabled']}, behind {log['configs_behind']}; Task states "
          f"{log['task_states']}; exit on SIGTERM {r['server_exit']}")  # fmt: skip


def main() -> int:
    if "--receiver" in sys.argv:
        receiver_main()
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=100, help="Tasks sent per second")
    parser.add_argument("--seconds", type=float, default=20, help="how long to send")
    parser.add_argument("--pg", action="store_true", help="PostgreSQL on 127.0.0.1:5432")
    parser.add_argument("--pg-database", default="toolnexus_bench_push")
    parser.add_argument("--workers", type=int, default=0, help="default: one per core")
    parser.add_argument("--concurrency", type=int, default=64, help="sends in flight at most")
    parser.add_argument("--send-timeout", type=float, default=30)
    parser.add_argument("--drain", type=float, default=180, help="s to wait for the last ones")
    parser.add_argument("--grace", type=float, default=1.0, help="s more, for duplicates")
    parser.add_argument("--py-spy", type=float, default=0, help="record one worker, s")
    parser.add_argument("--py-spy-after", type=float, default=5, help="s into the sending")
    parser.add_argument("--py-spy-out", default="/tmp/tnx-push-pyspy.txt")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if args.rate * args.seconds < 1 or args.rate * args.seconds > 100_000:
        parser.error("rate x seconds must be 1 to 100,000 Tasks")
    workdir = Path(tempfile.mkdtemp(prefix="tnx-push-"))
    if not args.json:
        for line in machine():
            if not line.startswith("load:"):  # about wrk, which this does not use
                print(line)
        print(f"load average {os.getloadavg()}; scratch {workdir}", flush=True)
    interrupted = False
    try:
        result = asyncio.run(run(args, workdir))
    except KeyboardInterrupt:
        interrupted = True
        result = {}
    finally:
        if args.pg:
            try:
                drop_pg(args)
            except Exception as exc:
                print(f"could not drop {args.pg_database}: {exc}", file=sys.stderr)
        if not os.environ.get("KEEP_LOGS"):
            shutil.rmtree(workdir, ignore_errors=True)
    if interrupted:
        return 130
    if args.json:
        json.dump(result, sys.stdout, indent=1, default=str)
        print()
    else:
        show(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
