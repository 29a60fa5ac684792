"""A worker's memory under unfinished oversized headers (issue 18, item 8).

Starts ``manage.py toolnexus_serve --workers 1`` (testproject, a scratch
SQLite database), reads its worker's RSS from /proc, then opens N
connections that each send a request line and one header of M bytes that
never ends (no CRLF, so the headers never finish), all at once, and holds
them. It reports the worker's RSS before, its peak (VmHWM) and RSS while the
connections are held, how each connection ended (431 from the server, closed
by the server, still open) and the RSS once the clients are gone; then that
the server still answers. Not a test (tests/serving/test_serving_edge.py checks the
behaviour); loopback only; the server is stopped here.

    .venv/bin/python benchmarks/header_flood.py [--connections 200] [--header-mb 2] [--hold 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CARD = "/agent/.well-known/agent-card.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of ``pid``, in KiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def worker_of(master: int) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.1)
    raise SystemExit("no worker process")


def answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + CARD, timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False


async def flood_one(port: int, size: int, hold: float) -> tuple[str, float]:
    """(how the connection ended, seconds until then) for one client."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = b"GET /admin/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
    try:
        writer.write(head)
        chunk = b"a" * 65536
        for _ in range(size // len(chunk)):
            writer.write(chunk)
            await writer.drain()
        reply = await asyncio.wait_for(reader.read(64), timeout=hold)
    except (ConnectionError, OSError):
        return "closed by the server (reset)", time.monotonic() - started
    except TimeoutError:
        return "still open", time.monotonic() - started
    finally:
        writer.close()
    if reply.startswith(b"HTTP/1.1 431"):
        return "431, then closed", time.monotonic() - started
    if not reply:
        return "closed by the server", time.monotonic() - started
    return f"answered {reply[:12]!r}", time.monotonic() - started


async def flood(
    port: int, count: int, size: int, hold: float, pid: int
) -> tuple[dict[str, list[float]], int]:
    """How the connections ended (kind -> seconds each took), and the
    worker's highest RSS sampled meanwhile (KiB)."""
    peak = [0]

    async def watch() -> None:
        while True:
            peak[0] = max(peak[0], memory(pid)["VmRSS"])
            await asyncio.sleep(0.05)

    watcher = asyncio.ensure_future(watch())
    try:
        ended = await asyncio.gather(*(flood_one(port, size, hold) for _ in range(count)))
    finally:
        watcher.cancel()
    kinds: dict[str, list[float]] = {}
    for kind, seconds in ended:
        kinds.setdefault(kind, []).append(seconds)
    return kinds, peak[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--header-mb", type=float, default=2)
    parser.add_argument("--hold", type=float, default=10, help="seconds a client waits for an end")
    parser.add_argument("--read-timeout", default="30", help="TOOLNEXUS READ_TIMEOUT (seconds)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="header-flood-"))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LLM_")},
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
        "TOOLNEXUS_READ_TIMEOUT": args.read_timeout,
    }
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [PY, "manage.py", "toolnexus_serve", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not answers(base):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the server did not start")
            time.sleep(0.2)
        pid = worker_of(proc.pid)
        for _ in range(20):  # warm the worker up as a real one would be
            answers(base)
        before = memory(pid)
        size = int(args.header_mb * 1024 * 1024)
        started = time.monotonic()
        kinds, peak = asyncio.run(flood(port, args.connections, size, args.hold, pid))
        took = time.monotonic() - started
        during = memory(pid)
        time.sleep(2)
        after = memory(pid)
        still_serving = answers(base)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    mib = 1 / 1024
    print(
        f"{args.connections} connections x {args.header_mb:g} MB unfinished header, "
        f"READ_TIMEOUT {args.read_timeout} s, 1 worker; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"worker RSS before:             {before['VmRSS'] * mib:8.1f} MiB")
    print(f"worker RSS peak (sampled):     {peak * mib:8.1f} MiB")
    print(f"worker VmHWM (peak, kernel):   {during['VmHWM'] * mib:8.1f} MiB")
    print(f"worker RSS 2 s after clients:  {after['VmRSS'] * mib:8.1f} MiB")
    for kind, seconds in sorted(kinds.items()):
        print(f"  {len(seconds):4d} {kind:32s} after {min(seconds):6.2f}-{max(seconds):6.2f} s")
    print(f"flood took {took:.1f} s; the server still answers: {still_serving}")


if __name__ == "__main__":
    main()
