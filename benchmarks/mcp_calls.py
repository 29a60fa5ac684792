"""MCP ``tools/call`` at ``<prefix>/mcp``, side by side with toolnexus's own
``Toolkit.serve`` MCP server (``POST /mcp``), in the same run.

Both serve one instant native tool (``echo``, ``benchmarks/mcp_settings.py``)
statelessly; ``wrk -t2 -c16`` posts the same ``tools/call`` to each in turn
(interleaved rounds), and the servers' CPU is read from /proc for each one's
whole process tree. ``toolnexus_serve`` runs with no flags (2 workers), the
audit on (one McpCall row per call, written before the answer is sent) on
SQLite, or the database ``--database-url`` names; ``MCP_BENCH_AUDIT=0`` turns
the rows off (the signal only).

    .venv/bin/python benchmarks/mcp_calls.py [--seconds 10] [--rounds 2] [--database-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "hi"}},
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
TOOLNEXUS_OWN = """
import asyncio, sys, toolnexus
sys.path.insert(0, {root!r})
from benchmarks.mcp_settings import echo

async def main():
    toolkit = await toolnexus.create_toolkit(builtins=False, extra_tools=[echo])
    await toolkit.serve("127.0.0.1:{port}", mcp={{"tools": ["echo"]}})
    await asyncio.Event().wait()

asyncio.run(main())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its descendants (from /proc)."""
    total, todo, tick = 0.0, [pid], os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        todo += [int(c) for c in children]
    return total


def post(url: str) -> dict[str, Any]:
    request = urllib.request.Request(url, json.dumps(CALL).encode(), HEADERS)
    with urllib.request.urlopen(request, timeout=10) as reply:
        return dict(json.loads(reply.read()))


def start(name: str, argv: list[str], url: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            answer = post(url)
            assert answer["result"]["content"][0]["text"] == "hi", answer
            return proc
        except (OSError, KeyError):
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{name} did not answer at {url}")


def wrk(url: str, seconds: float, proc: subprocess.Popen[bytes]) -> dict[str, float]:
    script = Path(tempfile.mkstemp(suffix=".lua")[1])
    script.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = {json.dumps(json.dumps(CALL))}\n"
        + "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in HEADERS.items())
    )
    before = tree_cpu(proc.pid)
    out = subprocess.run(
        ["wrk", "-t2", "-c16", f"-d{seconds:.0f}s", "--latency", "-s", str(script), url],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    cpu = tree_cpu(proc.pid) - before
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)

    def ms(label: str) -> float:
        found = re.search(rf"{label}\s+([\d.]+)(us|ms|s)\b", out)
        value, unit = float(found.group(1)), found.group(2)  # type: ignore[union-attr]
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    return {
        "rps": requests / seconds,
        "cpu_ms": 1000 * cpu / max(1, requests),
        "p50": ms("50%"),
        "p99": ms("99%"),
        "errors": float(errors.group(1)) if errors else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--database-url", default=None, help="e.g. postgres://postgres@127.0.0.1:5432/bench"
    )
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "benchmarks.mcp_settings",
        "DATABASE_URL": args.database_url or f"sqlite:///{workdir / 'db.sqlite3'}",
        "PYTHONPATH": str(ROOT),
    }
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    ours_port, theirs_port = free_port(), free_port()
    ours_url = f"http://127.0.0.1:{ours_port}/agent/mcp"
    theirs_url = f"http://127.0.0.1:{theirs_port}/mcp"
    ours = [PY, "manage.py", "toolnexus_serve", f"127.0.0.1:{ours_port}"]
    theirs = [PY, "-c", TOOLNEXUS_OWN.format(root=str(ROOT), port=theirs_port)]
    servers = {
        "toolnexus_serve (this app)": (start("toolnexus_serve", ours, ours_url, env), ours_url),
        "toolnexus Toolkit.serve": (start("Toolkit.serve", theirs, theirs_url, env), theirs_url),
    }
    results: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
    try:
        for _ in range(args.rounds):
            for name, (proc, url) in servers.items():
                results[name].append(wrk(url, args.seconds, proc))
    finally:
        for proc, _ in servers.values():
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    print(f"load average {os.getloadavg()[0]:.1f}; wrk -t2 -c16 -d{args.seconds:.0f}s, "
          f"{args.rounds} interleaved rounds (best round shown)")  # fmt: skip
    print("| server | tools/call req/s | CPU per call | p50 / p99 | non-2xx |")
    print("|---|---:|---:|---:|---:|")
    for name, rounds in results.items():
        best = max(rounds, key=lambda r: r["rps"])
        print(f"| {name} | {best['rps']:,.0f} | {best['cpu_ms']:.2f} ms | "
              f"{best['p50']:.1f} / {best['p99']:.1f} ms | {best['errors']:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
