"""Which HTTP server should ``toolnexus_serve`` run? Measure, side by side.

Every candidate serves the real endpoint of the testproject (JSON-RPC
``GetTask`` on a completed Task, read through the Django store) from the same
database. Each one is started as a subprocess on 127.0.0.1, checked for a
correct answer, warmed up, loaded with ``wrk`` (or, without wrk, a small
asyncio keep-alive client -- slower, so its numbers are not comparable with
wrk's), stopped with SIGTERM, and reported in one table.

    .venv/bin/python benchmarks/servers.py                       # all candidates, SQLite
    .venv/bin/python benchmarks/servers.py --only gunicorn       # names containing "gunicorn"
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench .venv/bin/python benchmarks/servers.py

Results and the decision are written down in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
MANAGE = str(ROOT / "manage.py")


@dataclass
class Candidate:
    name: str
    argv: Callable[[int], list[str]]  # port -> command line
    note: str = ""


def _gunicorn(
    workers: int, threads: int, worker_class: str = "gthread"
) -> Callable[[int], list[str]]:
    def argv(port: int) -> list[str]:
        return [
            PY, "-m", "gunicorn", "testproject.wsgi:application",
            "-b", f"127.0.0.1:{port}", "-k", worker_class,
            "-w", str(workers), "--threads", str(threads), "--log-level", "warning",
        ]  # fmt: skip

    return argv


def _gunicorn_asgi(workers: int) -> Callable[[int], list[str]]:
    def argv(port: int) -> list[str]:
        return [
            PY, "-m", "gunicorn", "testproject.asgi:application",
            "-b", f"127.0.0.1:{port}", "-k", "asgi", "-w", str(workers),
            "--log-level", "warning",
        ]  # fmt: skip

    return argv


def _uvicorn(interface: str, workers: int = 1) -> Callable[[int], list[str]]:
    module = (
        "testproject.wsgi:application" if interface == "wsgi" else "testproject.asgi:application"
    )

    def argv(port: int) -> list[str]:
        return [
            PY, "-m", "uvicorn", module, "--interface", interface,
            "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
            "--no-access-log", "--log-level", "warning",
        ]  # fmt: skip

    return argv


def _granian(workers: int, loop: str = "uvloop", *extra: str) -> Callable[[int], list[str]]:
    def argv(port: int) -> list[str]:
        return [
            PY, "-m", "granian", "--interface", "asgi", "testproject.asgi:application",
            "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
            "--loop", loop, "--no-ws", "--log-level", "warning", "--backpressure", "4096",
            *extra,
        ]  # fmt: skip

    return argv


def _uvicorn_fast(workers: int) -> Callable[[int], list[str]]:
    def argv(port: int) -> list[str]:
        return [
            PY, "-m", "uvicorn", "testproject.asgi:application", "--http", "httptools",
            "--loop", "uvloop", "--host", "127.0.0.1", "--port", str(port),
            "--workers", str(workers), "--no-access-log", "--log-level", "warning",
        ]  # fmt: skip

    return argv


def _serve(*extra: str) -> Callable[[int], list[str]]:
    def argv(port: int) -> list[str]:
        return [PY, MANAGE, "toolnexus_serve", f"127.0.0.1:{port}", *extra]

    return argv


CANDIDATES = [
    Candidate("gunicorn gthread 1x4", _gunicorn(1, 4)),
    Candidate("gunicorn gthread 1x8", _gunicorn(1, 8)),
    Candidate("gunicorn gthread 2x8", _gunicorn(2, 8)),
    Candidate("gunicorn gthread 2x4", _gunicorn(2, 4)),
    Candidate("gunicorn gthread 4x4", _gunicorn(4, 4)),
    Candidate("gunicorn sync 4", _gunicorn(4, 1, "sync"), "no keep-alive"),
    Candidate("gunicorn asgi 2", _gunicorn_asgi(2), "gunicorn 27's own ASGI worker"),
    Candidate("uvicorn asgi 1", _uvicorn("asgi3")),
    Candidate("uvicorn asgi 2", _uvicorn("asgi3", 2)),
    Candidate("uvicorn wsgi 1", _uvicorn("wsgi"), "deprecated in uvicorn"),
    Candidate("uvicorn wsgi 2", _uvicorn("wsgi", 2), "deprecated in uvicorn"),
    Candidate("granian asgi 1", _granian(1), "lean ASGI endpoint, uvloop"),
    Candidate("granian asgi 2", _granian(2), "lean ASGI endpoint, uvloop"),
    Candidate(
        "granian asgi 2 st",
        _granian(2, "uvloop", "--runtime-mode", "st"),
        "single-threaded runtime",
    ),
    Candidate(
        "granian asgi 2 rust tasks", _granian(2, "uvloop", "--task-impl", "rust"), "rust task impl"
    ),
    Candidate("uvicorn httptools 1", _uvicorn_fast(1), "lean ASGI endpoint, uvloop"),
    Candidate("uvicorn httptools 2", _uvicorn_fast(2), "lean ASGI endpoint, uvloop"),
    Candidate("toolnexus_serve (default)", _serve(), "the shipped command"),
    Candidate("toolnexus_serve --workers 2", _serve("--workers", "2"), "the shipped command"),
]


# -- plumbing ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post_json(url: str, payload: dict[str, Any], timeout: float = 5) -> Any:
    req = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def wait_until(probe: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = probe()
        except (OSError, urllib.error.URLError, ValueError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def card_ready(base: str) -> bool:
    with urllib.request.urlopen(f"{base}/agent/.well-known/agent-card.json", timeout=2) as r:
        return r.status == 200


@dataclass
class Server:
    argv: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = field(default=None)

    def __enter__(self) -> Server:
        self._out = self.log.open("wb")
        # A session of its own: SIGTERM reaches the server, not this script.
        self.proc = subprocess.Popen(
            self.argv, cwd=ROOT, env=self.env, stdout=self._out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        return self

    def stop(self, timeout: float = 20) -> int | None:
        """SIGTERM, then wait; returns the exit code (None if it had to be killed)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return None

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._out.close()


# -- load generators -----------------------------------------------------------

WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = %(body)s
wrk.headers["Content-Type"] = "application/json"
bad = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"completed"', 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + t:get("bad") end
  io.write(string.format("BAD %%d\\n", n))
  io.write(string.format("P50_US %%d\\nP99_US %%d\\n",
    latency:percentile(50), latency:percentile(99)))
end
"""


@dataclass
class Load:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    bad: int
    errors: str = ""
    cpu_ms: float = 0.0  # server CPU time per request, all its processes


def proc_stats() -> Iterator[tuple[int, list[str]]]:
    """(pid, the fields of /proc/<pid>/stat after "pid (comm)") of every live
    process: state, ppid, pgrp, ..., utime (the 12th), stime (the 13th)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(entry.name), fields


def group_cpu_seconds(pgid: int) -> float:
    """user+system CPU seconds of every live process in group ``pgid`` (Linux).
    Unlike req/s this hardly moves when a neighbour loads the machine."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = sum(int(f[11]) + int(f[12]) for _, f in proc_stats() if int(f[2]) == pgid)
    return total / ticks


def run_wrk(url: str, body: str, seconds: float, connections: int, threads: int) -> Load:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(WRK_SCRIPT % {"body": json.dumps(body)})
        script = f.name
    try:
        out = subprocess.run(
            ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:.0f}s", "-s", script, url],
            capture_output=True, text=True, timeout=seconds + 30, check=True,
        ).stdout  # fmt: skip
    finally:
        os.unlink(script)

    def grab(pattern: str, default: str = "0") -> str:
        m = re.search(pattern, out)
        return m.group(1) if m else default

    errors = grab(r"(Socket errors:[^\n]*)", "") + grab(r"(Non-2xx[^\n]*)", "")
    return Load(
        rps=float(grab(r"Requests/sec:\s+([\d.]+)")),
        p50_ms=int(grab(r"P50_US (\d+)")) / 1000,
        p99_ms=int(grab(r"P99_US (\d+)")) / 1000,
        requests=int(grab(r"(\d+) requests in")),
        bad=int(grab(r"BAD (\d+)")),
        errors=errors.strip(),
    )


async def _py_load(url: str, body: bytes, seconds: float, connections: int) -> Load:
    """A bounded keep-alive HTTP/1.1 client: ``connections`` loops for ``seconds``."""
    host, port = re.match(r"http://([^:/]+):(\d+)", url).groups()  # type: ignore[union-attr]
    path = "/" + url.split("/", 3)[3]
    request = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    latencies: list[float] = []
    bad = 0
    stop_at = time.monotonic() + seconds

    async def one() -> None:
        nonlocal bad
        reader = writer = None
        while time.monotonic() < stop_at:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, int(port))
            assert reader is not None
            t0 = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))  # type: ignore[union-attr]
            payload = await reader.readexactly(length)
            latencies.append(time.perf_counter() - t0)
            if not head.startswith(b"HTTP/1.1 200") or b'"completed"' not in payload:
                bad += 1
            if re.search(rb"(?i)connection:\s*close", head):
                writer.close()
                reader = writer = None
        if writer is not None:
            writer.close()

    t0 = time.monotonic()
    await asyncio.gather(*(one() for _ in range(connections)))
    elapsed = time.monotonic() - t0
    latencies.sort()
    n = len(latencies)
    return Load(
        rps=n / elapsed,
        p50_ms=statistics.median(latencies) * 1000 if n else 0,
        p99_ms=latencies[min(n - 1, int(n * 0.99))] * 1000 if n else 0,
        requests=n,
        bad=bad,
    )


def run_load(url: str, body: str, seconds: float, connections: int, threads: int) -> Load:
    if shutil.which("wrk"):
        return run_wrk(url, body, seconds, connections, threads)
    return asyncio.run(_py_load(url, body.encode(), seconds, connections))


# -- the benchmark -------------------------------------------------------------


def machine() -> list[str]:
    import django

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def version(module: str) -> str:
        try:
            return __import__(module).__version__
        except Exception:
            return "-"

    loader = "wrk" if shutil.which("wrk") else "python asyncio client (not comparable with wrk)"
    if shutil.which("wrk"):
        loader = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.split("\n")[0]
    return [
        f"nproc {os.cpu_count()}, CPU {cpu}, {platform.system()} {platform.release()}",
        f"Python {platform.python_version()}, Django {django.get_version()}, "
        f"gunicorn {version('gunicorn')}, uvicorn {version('uvicorn')}",
        f"load: {loader.strip()}",
    ]


def prepare(env: dict[str, str], workdir: Path) -> str:
    """Migrate the database and leave one completed Task in it; returns its id."""
    subprocess.run([PY, MANAGE, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with Server(_gunicorn(1, 4)(port), env, workdir / "seed.log") as server:
        wait_until(lambda: card_ready(base), 30, "the seeding server")
        sent = post_json(
            f"{base}/agent/",
            {
                "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                "params": {"message": {"role": "user", "parts": [
                    {"kind": "text", "text": "Summarise: the benchmark task reads this."}]}},
            },
        )  # fmt: skip
        task_id = sent["result"]["id"]

        def completed() -> bool:
            got = post_json(
                f"{base}/agent/",
                {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}},
            )
            return got["result"]["status"]["state"] == "completed"

        wait_until(completed, 30, "the seeded Task to complete")
        server.stop()
    return task_id


def measure(
    cand: Candidate,
    env: dict[str, str],
    body: str,
    args: argparse.Namespace,
    workdir: Path,
    round_: int = 1,
) -> tuple[Load | None, int | None, str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    slug = re.sub(r"\W+", "_", cand.name).strip("_")
    log = workdir / f"{slug}-{round_}.log"
    with Server(cand.argv(port), env, log) as server:
        try:
            wait_until(lambda: card_ready(base), 30, f"{cand.name} to answer")
            check = post_json(f"{base}/agent/", json.loads(body))
            if check.get("result", {}).get("status", {}).get("state") != "completed":
                return None, server.stop(), f"wrong answer: {check}"
            run_load(f"{base}/agent/", body, args.warmup, args.connections, args.threads)
            assert server.proc is not None
            cpu0 = group_cpu_seconds(server.proc.pid)
            load = run_load(f"{base}/agent/", body, args.duration, args.connections, args.threads)
            cpu = group_cpu_seconds(server.proc.pid) - cpu0
            load.cpu_ms = cpu * 1000 / max(1, load.requests)
        except Exception as exc:
            server.stop()
            tail = log.read_text(errors="replace")[-800:]
            return None, None, f"{exc}\n{tail}"
        t0 = time.monotonic()
        code = server.stop()
        return load, code, f"stopped in {time.monotonic() - t0:.1f}s"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--only", nargs="*", default=[], help="run candidates whose name contains any of these"
    )
    parser.add_argument(
        "--duration", type=float, default=10, help="measured seconds per server (<= 15)"
    )
    parser.add_argument("--warmup", type=float, default=2, help="warm-up seconds per server")
    parser.add_argument("--connections", "-c", type=int, default=16)
    parser.add_argument("--threads", "-t", type=int, default=2, help="wrk threads")
    parser.add_argument(
        "--repeat", "-r", type=int, default=3,
        help="rounds over all candidates (interleaved, so a noisy neighbour hits them alike); "
        "the table shows the median round",
    )  # fmt: skip
    args = parser.parse_args()
    args.duration = min(args.duration, 15)

    workdir = Path(tempfile.mkdtemp(prefix="tnx-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}  # offline demo model
    env.setdefault("DATABASE_URL", f"sqlite:///{workdir / 'bench.sqlite3'}")
    env.update({"TOOLNEXUS_STORE": "django", "TOOLNEXUS_LOG_LEVEL": "WARNING",
                "DJANGO_SETTINGS_MODULE": "testproject.settings"})  # fmt: skip
    db = env["DATABASE_URL"].split("://")[0]

    for line in machine():
        print(line)
    print(
        f"database: {db}; wrk -t{args.threads} -c{args.connections}, {args.warmup:.0f}s "
        f"warm-up + {args.duration:.0f}s measured, {args.repeat} rounds; logs in {workdir}"
    )
    task_id = prepare(env, workdir)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}})

    chosen = [c for c in CANDIDATES if not args.only or any(o in c.name for o in args.only)]
    runs: dict[str, list[tuple[Load | None, int | None, str]]] = {c.name: [] for c in chosen}
    for round_ in range(1, args.repeat + 1):
        print(f"round {round_}/{args.repeat} (load average {os.getloadavg()[0]:.2f})", flush=True)
        for cand in chosen:
            load, code, note = measure(cand, env, body, args, workdir, round_)
            runs[cand.name].append((load, code, note))
            shown = f"{load.rps:6.0f} req/s {load.cpu_ms:5.2f} CPU-ms/req" if load else "FAILED"
            print(
                f"  {cand.name:<30} {shown}  ({note.splitlines()[0] if note else ''})", flush=True
            )

    print()
    print(
        "| server | req/s (median) | min-max | median ms | p99 ms | CPU ms/req | bad "
        "| exit on SIGTERM | note |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    for cand in chosen:
        done = [r for r in runs[cand.name] if r[0] is not None]
        codes = sorted({str(r[1]) for r in runs[cand.name]})
        if not done:
            note = runs[cand.name][-1][2].splitlines()[0]
            print(f"| {cand.name} | failed | | | | | | {', '.join(codes)} | {note} |")
            continue
        done.sort(key=lambda r: r[0].rps)  # type: ignore[union-attr]
        load = done[len(done) // 2][0]
        assert load is not None
        lo, hi = done[0][0].rps, done[-1][0].rps  # type: ignore[union-attr]
        bad = sum(r[0].bad for r in done)  # type: ignore[union-attr]
        cpu = statistics.median(r[0].cpu_ms for r in done)  # type: ignore[union-attr]
        extra = "; ".join(x for x in (cand.note, load.errors) if x)
        print(
            f"| {cand.name} | {load.rps:.0f} | {lo:.0f}-{hi:.0f} | {load.p50_ms:.1f} | "
            f"{load.p99_ms:.1f} | {cpu:.2f} | {bad} | {', '.join(codes)} | {extra} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
