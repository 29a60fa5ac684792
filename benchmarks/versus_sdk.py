"""toolnexus_serve side by side with the official a2a-sdk 1.3.0 server, in one run.

The servers run at once on 127.0.0.1, each in a process group of its own:

* ``sdk memory`` — the official SDK's Starlette JSON-RPC app on uvicorn with
  its InMemoryTaskStore (benchmarks/sdk_agent.py, in a venv of its own:
  benchmarks/sdk_venv.sh);
* ``sdk sqlite`` — the same with its DatabaseTaskStore on SQLite;
* ``toolnexus sqlite`` and ``toolnexus postgres`` — ``manage.py
  toolnexus_serve`` with no flags, the django store;
* ``toolnexus sqlite traced`` (when named in ``--servers``) — the same with
  ``TRACING`` on and every span dropped by its exporter
  (benchmarks/traced_settings.py): what tracing costs the server.

All four call the same fake model (benchmarks/loadclient.py, a process of its
own): a message with ``[sleep 2]`` in it is answered after 2 s, any other at
once. Each workload runs against the four servers one after the other
(interleaved, so a noisy neighbour hits them alike); the server's CPU is
read from /proc for its whole process group. The client is raw asyncio
sockets (loadclient.py) and shares the two cores with the servers, as it
would on a small box.

The gRPC workloads (``grpc_gettask``, ``grpc_e2e``) have each server serve the
gRPC binding too: the SDK its ``GrpcHandler`` over the same request handler
and store (``sdk_agent.py --grpc-port``), ours ``TOOLNEXUS["GRPC"]`` (the
testproject's ``TOOLNEXUS_GRPC_ADDRESS``). Their client is
benchmarks/grpc_load.py (grpc.aio, N callers on one channel for a fixed time,
the SDK venv's python), a process of its own as well.

    bash benchmarks/sdk_venv.sh                      # once: the SDK's venv
    .venv/bin/python benchmarks/versus_sdk.py        # everything, ~10 minutes
    .venv/bin/python benchmarks/versus_sdk.py --only streams gettask \
        --servers "toolnexus sqlite" "sdk memory"
    .venv/bin/python benchmarks/versus_sdk.py --only grpc_gettask grpc_e2e \
        --grpc-callers 16 --grpc-seconds 10           # gRPC: GetTask, end-to-end Tasks

Results are written down in benchmarks/RESULTS.md ("Side by side with the a2a-sdk").
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from loadclient import Connection  # noqa: E402
from servers import group_cpu_seconds, machine  # noqa: E402

PY = sys.executable
SDK_VENV = Path(os.environ.get("SDK_VENV", "/tmp/tnx-sdk-venv"))
PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
PG_DB = "toolnexus_bench_vs"
V1 = {"A2A-Version": "1.0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def message(text: str) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": uuid.uuid4().hex[:8], "method": method, "params": params}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


# -- servers -------------------------------------------------------------------------------


@dataclass
class Server:
    name: str
    argv: list[str]
    env: dict[str, str]
    path: str  # the JSON-RPC endpoint's path
    log: Path
    port: int = field(default_factory=free_port)
    grpc_port: int = field(default_factory=free_port)  # used when a gRPC workload runs
    proc: subprocess.Popen[bytes] | None = None
    application: str | None = None  # PostgreSQL application_name of its sessions

    def start(self) -> None:
        out = self.log.open("wb")

        def fill(text: str) -> str:
            return text.replace("{port}", str(self.port)).replace("{grpc}", str(self.grpc_port))

        self.proc = subprocess.Popen(
            [fill(a) for a in self.argv],
            cwd=ROOT, env={k: fill(v) for k, v in self.env.items()}, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    async def ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.log.read_text()[-1500:]}")
            try:
                conn = Connection("127.0.0.1", self.port)
                reply = await conn.post(self.path, rpc("GetTask", {"id": "none"}), V1)
                conn.close()
                if reply.status == 200:
                    return
            except OSError:
                pass
            await asyncio.sleep(0.2)
        raise RuntimeError(f"{self.name} did not answer in {timeout}s")

    def cpu(self) -> float:
        assert self.proc is not None
        return group_cpu_seconds(self.proc.pid)

    def stop(self) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(5)


def prepare_sqlite(path: Path) -> str:
    url = f"sqlite:///{path}"
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "testproject.settings"}
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return url


def prepare_postgres() -> str:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {PG_DB}")
    url = f"postgres://postgres@127.0.0.1:5432/{PG_DB}"
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "testproject.settings"}
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return url


def pg_connections(application: str) -> int:
    import psycopg

    with psycopg.connect(PG_ADMIN) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [application]
        ).fetchone()
    return int(row[0]) if row else 0


#: ``toolnexus sqlite traced``: the testproject with TRACING on, spans dropped.
TRACED_SETTINGS = "benchmarks.traced_settings"


def make_servers(
    workdir: Path,
    model_url: str,
    chosen: list[str],
    grpc: bool = False,
    tnx_extra: dict[str, str] | None = None,
) -> list[Server]:
    """The chosen servers; with ``grpc``, each serves the gRPC binding too, on its
    ``grpc_port`` (the SDK: ``sdk_agent.py --grpc-port``; ours: TOOLNEXUS["GRPC"]);
    ``tnx_extra``: more environment for ours (the testproject's knobs)."""
    sdk_py = str(SDK_VENV / "bin" / "python")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "TOOLNEXUS_"))}
    servers = []
    if "sdk memory" in chosen or "sdk sqlite" in chosen:
        if not Path(sdk_py).exists():
            raise SystemExit(f"no SDK venv at {SDK_VENV}: run bash benchmarks/sdk_venv.sh first")
    agent = str(HERE / "sdk_agent.py")
    common = ["--port", "{port}", "--model-url", model_url, *(["--grpc-port", "{grpc}"] * grpc)]
    if "sdk memory" in chosen:
        servers.append(Server("sdk memory", [sdk_py, agent, *common, "--store", "memory"],
                              base_env, "/", workdir / "sdk-memory.log"))  # fmt: skip
    if "sdk sqlite" in chosen:
        store = f"sqlite:{workdir / 'sdk.sqlite3'}"
        servers.append(Server("sdk sqlite", [sdk_py, agent, *common, "--store", store],
                              base_env, "/", workdir / "sdk-sqlite.log"))  # fmt: skip
    tnx_env = {
        **base_env,
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "LLM_BASE_URL": model_url,
        "LLM_RETRIES": "0",
        "LLM_TIMEOUT_MS": "120000",
        "TOOLNEXUS_STORE": "django",
        "TOOLNEXUS_LOG_LEVEL": "WARNING",
        **({"TOOLNEXUS_GRPC_ADDRESS": "127.0.0.1:{grpc}"} if grpc else {}),
        **(tnx_extra or {}),
    }
    serve = [PY, "manage.py", "toolnexus_serve", "127.0.0.1:{port}"]
    if "toolnexus sqlite" in chosen:
        url = prepare_sqlite(workdir / "tnx.sqlite3")
        servers.append(Server("toolnexus sqlite", serve, {**tnx_env, "DATABASE_URL": url},
                              "/agent/", workdir / "tnx-sqlite.log"))  # fmt: skip
    if "toolnexus sqlite traced" in chosen:  # TRACING on (benchmarks/traced_settings.py)
        url = prepare_sqlite(workdir / "tnx-traced.sqlite3")
        traced = {**tnx_env, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": TRACED_SETTINGS}
        servers.append(Server("toolnexus sqlite traced", serve, traced,
                              "/agent/", workdir / "tnx-sqlite-traced.log"))  # fmt: skip
    if "toolnexus postgres" in chosen:
        url = prepare_postgres()
        app = f"tnx-bench-{os.getpid()}"
        server = Server("toolnexus postgres", serve,
                        {**tnx_env, "DATABASE_URL": f"{url}?application_name={app}"},
                        "/agent/", workdir / "tnx-postgres.log")  # fmt: skip
        server.application = app
        servers.append(server)
    return servers


# -- workloads -------------------------------------------------------------------------------

Result = dict[str, Any]


async def streams(server: Server, n: int, sleep: float) -> Result:
    """``n`` concurrent SendStreamingMessage; seconds from send to the final event."""
    times: list[float] = []
    refused = 0
    connections: list[int] = []

    async def one(i: int) -> None:
        nonlocal refused
        conn = Connection("127.0.0.1", server.port)
        t0 = time.monotonic()
        params = {"message": message(f"stream {i} [sleep {sleep}]")}
        final = False
        try:
            async for event in conn.events(server.path, rpc("SendStreamingMessage", params), V1):
                if "error" in event:
                    break
                update = event.get("result", {}).get("statusUpdate") or {}
                if update.get("status", {}).get("state") == "TASK_STATE_COMPLETED":
                    final = True
                    break
        except Exception:
            pass
        finally:
            conn.close()
        if final:
            times.append(time.monotonic() - t0)
        else:
            refused += 1

    async def sample() -> None:
        if server.application:
            await asyncio.sleep(sleep * 0.75)
            connections.append(await asyncio.to_thread(pg_connections, server.application))

    await asyncio.gather(*(one(i) for i in range(n)), sample())
    out = {
        "done": len(times),
        "refused": refused,
        "median": pct(times, 0.5),
        "p99": pct(times, 0.99),
    }
    if connections:
        out["pg_connections"] = connections[0]
    return out


async def blocking(server: Server, n: int, sleep: float) -> Result:
    """``n`` concurrent blocking SendMessage (v1.0's default)."""
    times: list[float] = []
    failed = 0

    async def one(i: int) -> None:
        nonlocal failed
        conn = Connection("127.0.0.1", server.port)
        t0 = time.monotonic()
        try:
            reply = await conn.post(
                server.path, rpc("SendMessage", {"message": message(f"b {i} [sleep {sleep}]")}), V1
            )
            state = reply.json().get("result", {}).get("task", {}).get("status", {}).get("state")
        except Exception:
            state = None
        finally:
            conn.close()
        if state == "TASK_STATE_COMPLETED":
            times.append(time.monotonic() - t0)
        else:
            failed += 1

    await asyncio.gather(*(one(i) for i in range(n)))
    return {
        "done": len(times),
        "failed": failed,
        "median": pct(times, 0.5),
        "p99": pct(times, 0.99),
    }


async def send_then_poll(server: Server, clients: int, seconds: float, sleep: float) -> Result:
    """``clients`` loops: a non-blocking send, then GetTask every 0.5 s until
    completed. Tasks completed per second over the window, after a warm-up of
    one model latency and a poll (before it nothing can have completed)."""
    done: list[float] = []
    start = time.monotonic()
    measure_from = start + sleep + 1.0
    stop_at = measure_from + seconds
    cpu0 = server.cpu()

    async def client(i: int) -> None:
        conn = Connection("127.0.0.1", server.port)
        k = 0
        try:
            while time.monotonic() < stop_at:
                k += 1
                params = {
                    "message": message(f"p {i}.{k} [sleep {sleep}]"),
                    "configuration": {"returnImmediately": True},
                }
                reply = await conn.post(server.path, rpc("SendMessage", params), V1)
                task = reply.json()["result"]["task"]
                while time.monotonic() < stop_at + 30:
                    await asyncio.sleep(0.5)
                    got = await conn.post(server.path, rpc("GetTask", {"id": task["id"]}), V1)
                    if got.json()["result"]["status"]["state"] == "TASK_STATE_COMPLETED":
                        if measure_from <= time.monotonic() <= stop_at:
                            done.append(time.monotonic())
                        break
        finally:
            conn.close()

    await asyncio.gather(*(client(i) for i in range(clients)), return_exceptions=True)
    cpu = server.cpu() - cpu0  # the whole run, warm-up and drain included
    return {"tasks_per_s": len(done) / seconds, "completed_in_window": len(done), "cpu_s": cpu}


async def completed_task(server: Server, headers: dict[str, str] | None = None) -> str:
    conn = Connection("127.0.0.1", server.port)
    send = rpc("SendMessage", {"message": message("seed")})
    reply = await conn.post(server.path, send, {**V1, **(headers or {})})
    conn.close()
    return str(reply.json()["result"]["task"]["id"])


def peer_headers(server: Server) -> dict[str, dict[str, str]]:
    """A peer agent's Authorization headers for ``server``, by scheme
    ("token": a DRF token, "basic": its password, hashed as Django 5.2 hashes
    a new one): a new user of the server's database. None for the SDK's
    servers, which run without authentication."""
    if not server.name.startswith("toolnexus"):
        return {"token": {}, "basic": {}}
    make = (
        "from django.contrib.auth.models import User;"
        "from rest_framework.authtoken.models import Token;"
        "u, _ = User.objects.get_or_create(username='peer-agent');"
        "u.set_password('peer-pw'); u.save();"
        "print(Token.objects.get_or_create(user=u)[0].key)"
    )
    env = {k: v for k, v in server.env.items() if "{" not in v}
    out = subprocess.run(
        [PY, "manage.py", "shell", "-c", make], cwd=ROOT, env=env,
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    basic = base64.b64encode(b"peer-agent:peer-pw").decode()
    return {
        "token": {"Authorization": f"Token {out.split()[-1]}"},
        "basic": {"Authorization": f"Basic {basic}"},
    }


async def slow_headers(server: Server, n: int, seconds: float) -> Result:
    """``n`` connections trickling their headers; GetTask latency meanwhile."""
    task_id = await completed_task(server)
    slow = []
    for _ in range(n):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        slow.append((reader, writer))
    latencies: list[float] = []
    errors = 0
    stop_at = time.monotonic() + seconds
    conn = Connection("127.0.0.1", server.port)

    async def trickle() -> None:
        while time.monotonic() < stop_at:
            for _, writer in slow:
                if not writer.is_closing():
                    writer.write(b"a")
            await asyncio.sleep(0.5)

    async def probe() -> None:
        nonlocal errors
        while time.monotonic() < stop_at:
            t0 = time.monotonic()
            try:
                reply = await asyncio.wait_for(
                    conn.post(server.path, rpc("GetTask", {"id": task_id}), V1), timeout=5
                )
                ok = reply.json()["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
            except Exception:
                ok = False
                conn.close()
            if ok:
                latencies.append(time.monotonic() - t0)
            else:
                errors += 1
            await asyncio.sleep(0.02)

    await asyncio.gather(trickle(), probe())
    conn.close()
    closed = sum(1 for reader, _ in slow if reader.at_eof())
    for _, writer in slow:
        writer.close()
    return {
        "gets": len(latencies),
        "errors": errors,
        "p50_ms": 1000 * pct(latencies, 0.5),
        "p99_ms": 1000 * pct(latencies, 0.99),
        "closed_by_server": closed,
    }


def gettask_wrk(
    server: Server, task_id: str, seconds: float, headers: dict[str, str] | None = None
) -> Result:
    """wrk -t2 -c16 on GetTask of a completed Task (with ``headers``: a
    credential): req/s, CPU ms per request."""
    body = rpc("GetTask", {"id": task_id})
    import json as _json

    script = Path(tempfile.mkstemp(suffix=".lua")[1])
    script.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = {_json.dumps(_json.dumps(body))}\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
        'wrk.headers["A2A-Version"] = "1.0"\n'
        + "".join(
            f"wrk.headers[{_json.dumps(k)}] = {_json.dumps(v)}\n"
            for k, v in (headers or {}).items()
        )
    )
    url = f"http://127.0.0.1:{server.port}{server.path}"
    subprocess.run(["wrk", "-t2", "-c16", "-d2s", "-s", str(script), url], capture_output=True)
    cpu0 = server.cpu()
    out = subprocess.run(
        ["wrk", "-t2", "-c16", f"-d{seconds:.0f}s", "--latency", "-s", str(script), url],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    cpu = server.cpu() - cpu0
    script.unlink()
    import re

    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]

    def ms(label: str) -> float:
        m = re.search(rf"{label}\s+([\d.]+)(us|ms|s)", out)
        if not m:
            return float("nan")
        return float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]

    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "req_per_s": rps,
        "cpu_ms_per_req": 1000 * cpu / max(1, requests),
        "p50_ms": ms("50%"),
        "p99_ms": ms("99%"),
        "non_2xx": int(non2xx.group(1)) if non2xx else 0,
    }


async def end_to_end(server: Server, clients: int, tasks: int) -> Result:
    """``clients`` loops of blocking sends to an instant model, ``tasks`` in all."""
    times: list[float] = []
    left = tasks
    cpu0 = server.cpu()
    t0 = time.monotonic()

    async def client() -> None:
        nonlocal left
        conn = Connection("127.0.0.1", server.port)
        try:
            while left > 0:
                left -= 1
                s = time.monotonic()
                reply = await conn.post(
                    server.path, rpc("SendMessage", {"message": message("x")}), V1
                )
                state = reply.json()["result"]["task"]["status"]["state"]
                if state == "TASK_STATE_COMPLETED":
                    times.append(time.monotonic() - s)
        finally:
            conn.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.monotonic() - t0
    cpu = server.cpu() - cpu0
    return {
        "tasks_per_s": len(times) / wall,
        "cpu_ms_per_task": 1000 * cpu / max(1, len(times)),
        "p50_ms": 1000 * pct(times, 0.5),
        "p99_ms": 1000 * pct(times, 0.99),
        "done": len(times),
    }


def grpc_load(server: Server, call: str, args: argparse.Namespace) -> Result:
    """benchmarks/grpc_load.py against the server's gRPC port: ``args.grpc_callers``
    callers for ``args.grpc_seconds`` after a warm-up. The client is a process of
    its own (the SDK venv's python: grpcio and the SDK's stubs), outside the
    server's process group, so the CPU read from /proc is the server's alone."""
    argv = [
        str(SDK_VENV / "bin" / "python"), str(HERE / "grpc_load.py"),
        "--target", f"127.0.0.1:{server.grpc_port}", "--call", call,
        "--callers", str(args.grpc_callers), "--seconds", str(args.grpc_seconds),
        "--warmup", str(args.grpc_warmup),
    ]  # fmt: skip
    load = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert load.stdout is not None
    try:
        if load.stdout.readline().strip() != "measuring":
            raise RuntimeError(f"grpc_load.py did not start against {server.name}")
        cpu0 = server.cpu()
        line = load.stdout.readline()
        cpu = server.cpu() - cpu0
    finally:
        if load.wait(60) != 0:
            raise RuntimeError(f"grpc_load.py failed against {server.name}")
    out = json.loads(line)
    per = "req" if call == "get" else "task"
    return {
        f"{per}s_per_s": out["per_s"],
        f"cpu_ms_per_{per}": 1000 * cpu / max(1, out["calls"]),
        "p50_ms": out["p50_ms"],
        "p99_ms": out["p99_ms"],
        "failures": out["failures"],
    }


# -- the run -----------------------------------------------------------------------------------


WORKLOADS: dict[str, Callable[[Server, argparse.Namespace], Awaitable[Result]]] = {}


def workload(name: str) -> Callable[[Any], Any]:
    def register(fn: Any) -> Any:
        WORKLOADS[name] = fn
        return fn

    return register


@workload("streams")
async def _streams(server: Server, args: argparse.Namespace) -> Result:
    return {f"{n}": await streams(server, n, args.sleep) for n in args.streams}


@workload("blocking")
async def _blocking(server: Server, args: argparse.Namespace) -> Result:
    return {f"{n}": await blocking(server, n, args.sleep) for n in args.blocking}


@workload("poll")
async def _poll(server: Server, args: argparse.Namespace) -> Result:
    return await send_then_poll(server, args.clients, args.window, args.sleep)


@workload("slow_headers")
async def _slow(server: Server, args: argparse.Namespace) -> Result:
    return await slow_headers(server, args.slow, 6)


@workload("gettask")
async def _gettask(server: Server, args: argparse.Namespace) -> Result:
    task_id = await completed_task(server)
    return await asyncio.to_thread(gettask_wrk, server, task_id, args.wrk_seconds)


@workload("gettask_token")
async def _gettask_token(server: Server, args: argparse.Namespace) -> Result:
    """GetTask as a peer with a DRF token (ours: TokenAuthentication; the
    SDK's: the same GetTask, its servers have no authentication)."""
    headers = (await asyncio.to_thread(peer_headers, server))["token"]
    task_id = await completed_task(server, headers)
    return await asyncio.to_thread(gettask_wrk, server, task_id, args.wrk_seconds, headers)


@workload("gettask_basic")
async def _gettask_basic(server: Server, args: argparse.Namespace) -> Result:
    """GetTask as a peer with HTTP Basic (a password Django hashes with PBKDF2)."""
    headers = (await asyncio.to_thread(peer_headers, server))["basic"]
    task_id = await completed_task(server, headers)
    return await asyncio.to_thread(gettask_wrk, server, task_id, args.wrk_seconds, headers)


@workload("e2e")
async def _e2e(server: Server, args: argparse.Namespace) -> Result:
    return await end_to_end(server, 16, args.tasks)


@workload("grpc_gettask")
async def _grpc_gettask(server: Server, args: argparse.Namespace) -> Result:
    return await asyncio.to_thread(grpc_load, server, "get", args)


@workload("grpc_e2e")
async def _grpc_e2e(server: Server, args: argparse.Namespace) -> Result:
    return await asyncio.to_thread(grpc_load, server, "send", args)


def show(name: str, results: dict[str, dict[str, Result]]) -> None:
    print(f"\n### {name}\n")
    for server, result in results.items():
        print(f"- {server}: {result}")


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, dict[str, Result]]:
    fake = subprocess.Popen(
        [PY, str(HERE / "loadclient.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert fake.stdout is not None
    model_url = fake.stdout.readline().strip()
    names = args.only or list(WORKLOADS)
    grpc = any(name.startswith("grpc_") for name in names)
    extra = dict(pair.split("=", 1) for pair in args.tnx_env)
    servers = make_servers(workdir, model_url, args.servers, grpc, extra)
    table: dict[str, dict[str, Result]] = {}
    try:
        for server in servers:
            server.start()
        for server in servers:
            await server.ready()
        for name in names:
            print(f"{name} (load average {os.getloadavg()[0]:.2f})", flush=True)
            table[name] = {}
            for server in servers:
                result = await WORKLOADS[name](server, args)
                table[name][server.name] = result
                print(f"  {server.name:<20} {result}", flush=True)
                await asyncio.sleep(1)
    finally:
        codes = {s.name: s.stop() for s in servers}
        assert fake.stdin is not None
        fake.stdin.close()
        fake.wait(10)
        print(f"exit codes on SIGTERM: {codes}")
    return table


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--only", nargs="*", choices=list(WORKLOADS), default=[])
    parser.add_argument(
        "--servers", nargs="*",
        default=["sdk memory", "sdk sqlite", "toolnexus sqlite", "toolnexus postgres"],
    )  # fmt: skip
    parser.add_argument("--sleep", type=float, default=2.0, help="the slow model's latency, s")
    parser.add_argument("--streams", type=int, nargs="*", default=[50, 300, 1000])
    parser.add_argument("--blocking", type=int, nargs="*", default=[50, 1000])
    parser.add_argument("--clients", type=int, default=200, help="send-then-poll clients")
    parser.add_argument("--window", type=float, default=20, help="send-then-poll window, s")
    parser.add_argument("--slow", type=int, default=100, help="slow-header connections")
    parser.add_argument("--wrk-seconds", type=float, default=10)
    parser.add_argument("--tasks", type=int, default=1000, help="end-to-end Tasks, instant model")
    parser.add_argument("--grpc-callers", type=int, default=16, help="gRPC workloads' callers")
    parser.add_argument("--grpc-seconds", type=float, default=10, help="each gRPC workload, s")
    parser.add_argument("--grpc-warmup", type=float, default=2, help="before each, s")
    parser.add_argument(
        "--tnx-env", nargs="*", default=[], metavar="NAME=VALUE",
        help="environment of our servers, e.g. TOOLNEXUS_CREDENTIAL_CACHE_SECONDS=0",
    )  # fmt: skip
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tnx-vs-sdk-"))
    for line in machine():
        print(line)
    print(f"load average {os.getloadavg()}; logs in {workdir}")
    try:
        asyncio.run(run(args, workdir))
    finally:
        if "toolnexus postgres" in args.servers:
            try:
                import psycopg

                with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                    conn.execute(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)")
            except Exception as exc:  # the numbers are printed already
                print(f"could not drop {PG_DB}: {exc}")
        shutil.rmtree(workdir, ignore_errors=True) if not os.environ.get("KEEP_LOGS") else None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
