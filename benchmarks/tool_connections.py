"""Tools that use the ORM, under load: database connections per server process.

N concurrent runs (default 500) against ``manage.py toolnexus_serve`` with no
flags (2 workers here) on PostgreSQL; each run's model calls one tool of
benchmarks/orm_tools.py (counts the users, writes a row, works 1 s without
the database), then says the tool's result back (the fake model of
benchmarks/loadclient.py), so every Task's artifact is the tool's own output
or its error. Reported per configuration: tool calls ok / failed, the
sessions each server process holds in ``pg_stat_activity`` (peak during the
load, sampled every 0.1 s; and 2 s after the last Task ended), the total time
from the first send to the last Task ended, and the server's CPU per run
(/proc, its whole process group).

By default PostgreSQL 15 is a throwaway cluster of its own (tests/pgcluster.py)
with ``max_connections`` 100, so the "before" rows, which run out of
connections, disturb no one else's database.

    .venv/bin/python benchmarks/tool_connections.py                       # every configuration
    .venv/bin/python benchmarks/tool_connections.py --configs t8 t16 --tools orm_sync
    .venv/bin/python benchmarks/tool_connections.py --before /work/wt/budget-before \\
        --configs before t8                                                # main, side by side
    .venv/bin/python benchmarks/tool_connections.py --runs 20 --work 0.1 --repeat 1

A configuration is TOOL_THREADS (``t8``, ``t16``, ``t32``), ``-age60`` for
``CONN_MAX_AGE=60`` (persistent connections), ``-pool`` for Django's psycopg
pool (``OPTIONS["pool"]``, at most DATABASE_THREADS + 4 + TOOL_THREADS per
process), or ``before`` (the checkout given by ``--before``, with its own
code and defaults). Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))

from loadclient import Connection  # noqa: E402
from servers import group_cpu_seconds, machine  # noqa: E402

from tests.pg_sessions import SessionWatch  # noqa: E402

PY = sys.executable
DATABASE_THREADS = 16
#: The app's own threads beside the database threads: lease keeper, wake-up
#: poller, sweep, main (docs/howto/production.md, "Database connections").
OWN = 4
CONFIGS = ["before", "t8", "t8-age60", "t16", "t16-age60", "t32", "t32-age60", "t8-pool"]
TOOLS = ["orm_sync", "orm_async", "dj_orm_sync", "dj_orm_async"]


@dataclass
class Config:
    name: str
    tree: Path
    tool_threads: int | None  # None: the checkout's own (before: no such setting)
    conn_max_age: int = 0
    pool: bool = False

    @property
    def budget(self) -> int | None:
        if self.tool_threads is None:
            return None
        return DATABASE_THREADS + OWN + self.tool_threads

    def env(self) -> dict[str, str]:
        env = {"DATABASE_CONN_MAX_AGE": str(self.conn_max_age)}
        if self.tool_threads is not None:
            env["TOOLNEXUS_TOOL_THREADS"] = str(self.tool_threads)
        if self.pool:
            assert self.budget is not None
            env["TOOLNEXUS_BENCH_DB_POOL"] = str(self.budget)
        return env


def parse_config(name: str, before: Path | None) -> Config:
    if name == "before":
        if before is None:
            raise SystemExit("--configs before needs --before <checkout of main>")
        return Config(name, before, None)
    m = re.fullmatch(r"t(\d+)(-age(\d+))?(-pool)?", name)
    if not m:
        raise SystemExit(f"unknown configuration {name!r} (e.g. t8, t16-age60, t8-pool, before)")
    return Config(name, ROOT, int(m.group(1)), int(m.group(3) or 0), bool(m.group(4)))


@dataclass
class Outcome:
    config: str
    tool: str
    ok: int = 0
    failed: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    peak: list[int] = field(default_factory=list)  # per server process, sorted
    after: list[int] = field(default_factory=list)
    seconds: float = 0.0
    cpu_ms: float = 0.0
    log_errors: int = 0


# -- PostgreSQL ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")


class Databases:
    """A migrated template database per checkout, copied afresh for each run.

    On the throwaway cluster the server connects as a role of its own, not a
    superuser (as a project's server would), so the superuser slots PostgreSQL
    reserves (``superuser_reserved_connections``, 3) are left for this
    script's watching, even when the server takes every other connection."""

    def __init__(self, admin_url: str, app_role: str | None = None) -> None:
        self.admin_url = admin_url
        self.app_role = app_role
        self.templates: dict[Path, str] = {}
        self.made: list[str] = []
        if app_role:
            self.sql(f"CREATE ROLE {app_role} LOGIN")

    def sql(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(statement)

    def url(self, name: str, admin: bool = False) -> str:
        url = self.admin_url.rsplit("/", 1)[0] + "/" + name
        if self.app_role and not admin:
            url = re.sub(r"//[^@/]*@", f"//{self.app_role}@", url)
        return url

    def fresh(self, tree: Path, env: dict[str, str]) -> str:
        if tree not in self.templates:
            template = f"tnx_tools_tpl_{len(self.templates)}_{os.getpid()}"
            self.sql(f"DROP DATABASE IF EXISTS {template}")
            owner = f" OWNER {self.app_role}" if self.app_role else ""
            self.sql(f"CREATE DATABASE {template}{owner}")
            self.made.append(template)
            run([PY, "manage.py", "migrate", "-v0"], tree,
                {**env, "DATABASE_URL": self.url(template)})  # fmt: skip
            self.templates[tree] = template
        name = f"tnx_tools_{len(self.made)}_{os.getpid()}"
        owner = f" OWNER {self.app_role}" if self.app_role else ""
        self.sql(f"CREATE DATABASE {name} TEMPLATE {self.templates[tree]}{owner}")
        self.made.append(name)
        return name

    def drop(self, name: str) -> None:
        self.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def close(self) -> None:
        for name in reversed(self.made):
            try:
                self.drop(name)
            except Exception as exc:  # the cluster may be gone already
                print(f"  (could not drop {name}: {exc})")


def states(conn: Any) -> Counter[str]:
    rows = conn.execute(
        "SELECT state, count(*) FROM toolnexus_django_taskrecord GROUP BY state"
    ).fetchall()
    return Counter({state: int(n) for state, n in rows})


# -- one measured run ----------------------------------------------------------------------


def rpc(n: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": method, "params": params}


async def send_all(port: int, tool: str, runs: int, clients: int) -> list[str]:
    """``runs`` non-blocking SendMessage (toolnexus dialect), ``clients`` at a time."""
    ids: list[str] = [""] * runs
    todo = iter(range(runs))

    async def client() -> None:
        conn = Connection("127.0.0.1", port)
        try:
            for n in todo:
                message = {
                    "role": "user",
                    "parts": [{"kind": "text", "text": f"[call {tool} {n}]"}],
                }
                reply = await conn.post("/agent/", rpc(n, "SendMessage", {"message": message}), {})
                ids[n] = reply.json()["result"]["id"]
        finally:
            conn.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return ids


async def read_all(port: int, ids: list[str], clients: int) -> list[str]:
    """Each Task's artifact text (or its final state when it has none)."""
    texts: list[str] = [""] * len(ids)
    todo = iter(range(len(ids)))

    async def client() -> None:
        conn = Connection("127.0.0.1", port)
        try:
            for n in todo:
                task = (await conn.post("/agent/", rpc(n, "GetTask", {"id": ids[n]}), {})).json()
                task = task["result"]
                parts = [p.get("text", "") for a in task.get("artifacts") or () for p in a["parts"]]
                texts[n] = " ".join(parts) or f"[{task['status']['state']}]"
        finally:
            conn.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return texts


def measure(
    config: Config, tool: str, args: argparse.Namespace, dbs: Databases, model_url: str,
    workdir: Path, pg_port: int,
) -> Outcome:  # fmt: skip
    import psycopg

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "TOOLNEXUS_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="benchmarks.tool_settings",
        # The "before" checkout finds this checkout's benchmarks/ (a namespace package).
        PYTHONPATH=str(ROOT),
        TOOLNEXUS_STORE="django",
        TOOLNEXUS_LOG_LEVEL="WARNING",
        TOOLNEXUS_BENCH_WORK=str(args.work),
        LLM_BASE_URL=model_url,
        LLM_RETRIES="0",
        LLM_TIMEOUT_MS="300000",
        **config.env(),
    )
    name = dbs.fresh(config.tree, env)
    env["DATABASE_URL"] = dbs.url(name)
    port = free_port()
    log = workdir / f"{config.name}-{tool}-{port}.log"
    out = Outcome(config.name, tool)
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [PY, "manage.py", "toolnexus_serve", f"127.0.0.1:{port}"],
            cwd=config.tree, env=env, stdout=sink, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while log.read_text(errors="replace").count("Booting worker") < 2 or not _ready(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        watch = SessionWatch(dbs.admin_url, proc.pid, name, pg_port)
        with watch, psycopg.connect(dbs.url(name, admin=True), autocommit=True) as conn:
            cpu0 = group_cpu_seconds(proc.pid)
            t0 = time.monotonic()
            ids = asyncio.run(send_all(port, tool, args.runs, args.clients))
            final = ("completed", "failed", "canceled")
            deadline = time.monotonic() + args.deadline
            while sum(states(conn)[s] for s in final) < args.runs:
                if time.monotonic() > deadline:  # reported as failed calls below
                    print(f"(not all Tasks ended in {args.deadline:.0f} s: {dict(states(conn))})",
                          end=" ")  # fmt: skip
                    break
                time.sleep(0.1)
            out.seconds = time.monotonic() - t0
            out.cpu_ms = (group_cpu_seconds(proc.pid) - cpu0) * 1000 / args.runs
        time.sleep(2)  # then what is still held is held for good
        after = watch.now()  # every process of the server: the master and its workers
        out.peak = sorted(watch.peak.get(pid, 0) for pid in after)
        out.after = sorted(after.values())
        for text in asyncio.run(read_all(port, ids, 16)):
            if text.startswith("tool said: ok "):
                out.ok += 1
            else:
                out.failed += 1
                out.errors[re.sub(r"\d+", "N", text)[:90]] += 1
        out.log_errors = log.read_text(errors="replace").count("too many clients")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        dbs.drop(name)
    return out


def _ready(port: int) -> bool:
    import urllib.request

    try:
        url = f"http://127.0.0.1:{port}/agent/.well-known/agent-card.json"
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def row(out: Outcome, budget: int | None) -> str:
    errors = "; ".join(f"{n}x {e}" for e, n in out.errors.most_common(2))
    return (
        f"| {out.config} | {out.tool} | {out.ok} / {out.failed} | "
        f"{'+'.join(map(str, out.peak))} | {'+'.join(map(str, out.after))} | "
        f"{budget if budget is not None else '-'} | {out.seconds:.1f} s | {out.cpu_ms:.1f} ms | "
        f"{out.log_errors} | {errors} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument(
        "--work", type=float, default=1.0, help="seconds a tool works after the ORM"
    )
    parser.add_argument("--configs", nargs="+", default=None, help=f"of {CONFIGS}")
    parser.add_argument("--tools", nargs="+", default=TOOLS, choices=TOOLS)
    parser.add_argument("--before", type=Path, help="a checkout of main (the 'before' rows)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each row (best shown)")
    parser.add_argument("--clients", type=int, default=500, help="connections sending at once")
    parser.add_argument("--deadline", type=float, default=300, help="seconds for all runs to end")
    parser.add_argument(
        "--database-url",
        help="an existing server's admin database instead of a throwaway cluster "
        "(postgres://postgres@127.0.0.1:5432/postgres)",
    )
    args = parser.parse_args()
    names = args.configs or [c for c in CONFIGS if c != "before" or args.before]
    configs = [parse_config(n, args.before) for n in names]

    for line in machine():
        print(line)
    workdir = Path(tempfile.mkdtemp(prefix="tnx-tool-conns-"))
    model = subprocess.Popen(
        [PY, str(HERE / "loadclient.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert model.stdout is not None
    model_url = model.stdout.readline().strip()
    try:
        if args.database_url:
            return report(args, configs, Databases(args.database_url), model_url, workdir,
                          int(args.database_url.split(":")[-1].split("/")[0]))  # fmt: skip
        from tests.pgcluster import pg_cluster

        with pg_cluster() as cluster:
            # The numbers were taken with max_connections 100.
            with (cluster.datadir / "postgresql.conf").open("a") as conf:
                conf.write("max_connections = 100\n")
            cluster.restart()
            version = cluster.psql("SELECT version()").split(" on ")[0]
            limit = cluster.psql("SHOW max_connections")
            print(f"PostgreSQL: {version}, max_connections {limit}, a throwaway cluster")
            dbs = Databases(cluster.url(), app_role="tnx_app")
            return report(args, configs, dbs, model_url, workdir, cluster.port)
    finally:
        assert model.stdin is not None
        model.stdin.close()
        model.wait(10)


def report(
    args: argparse.Namespace, configs: list[Config], dbs: Databases, model_url: str,
    workdir: Path, pg_port: int,
) -> int:  # fmt: skip
    print(f"{args.runs} concurrent runs per row, tools work {args.work} s after their ORM work; "
          f"best of {args.repeat}; logs in {workdir}", flush=True)  # fmt: skip
    header = (
        "| configuration | tool | calls ok / failed | sessions per process, peak | after "
        "| budget per process | total time | CPU per run | 'too many clients' in the log "
        "| errors |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
    )
    rows = []
    try:
        for config in configs:
            for tool in args.tools:
                if config.name == "before" and tool.startswith("dj_"):
                    continue  # main has no toolnexus_django.tool
                tries = []
                for attempt in range(args.repeat):
                    load = os.getloadavg()[0]
                    print(f"  {config.name} {tool} #{attempt + 1} (load average {load:.1f}) ...",
                          end=" ", flush=True)  # fmt: skip
                    out = measure(config, tool, args, dbs, model_url, workdir, pg_port)
                    print(row(out, config.budget), flush=True)
                    tries.append(out)
                best = min(tries, key=lambda o: (o.failed, o.seconds))
                # The worst connection counts of all tries, the best time and CPU.
                best.peak = max((o.peak for o in tries), key=lambda p: max(p, default=0))
                best.after = max((o.after for o in tries), key=lambda p: max(p, default=0))
                best.cpu_ms = min(o.cpu_ms for o in tries)
                rows.append(row(best, config.budget))
    finally:
        dbs.close()
    print()
    print(header)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
