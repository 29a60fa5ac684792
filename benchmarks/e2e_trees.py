"""versus_sdk.py's end-to-end workload (blocking sends to an instant model,
16 clients) against ``toolnexus_serve`` started from several source trees,
interleaved round by round (the order reversed every other round), with the
SDK's in-memory server alongside if asked.

Not a test. Each tree's server runs from the tree (``cwd`` and
``PYTHONPATH`` = the tree), on a database of its own; on PostgreSQL the CPU of
the database's backends (pg_stat_activity pids, from /proc) is counted per
Task too, since each write's commit costs mostly there.

    .venv/bin/python benchmarks/e2e_trees.py --trees /tmp/main . --sdk \\
        --servers "toolnexus postgres" "toolnexus sqlite" --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import versus_sdk as vs


class TreeServer(vs.Server):
    tree: Path = vs.ROOT

    def start(self) -> None:
        env = {k: v for k, v in self.env.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = str(self.tree)
        self.proc = subprocess.Popen(
            [a.replace("{port}", str(self.port)) for a in self.argv],
            cwd=self.tree, env=env, stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def backend_cpu(database: str) -> float:
    """user+system seconds of the PostgreSQL backends connected to ``database``."""
    import psycopg

    with psycopg.connect(vs.PG_ADMIN, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,))
        pids = [r[0] for r in rows.fetchall()]
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def servers_of(
    trees: list[Path], chosen: list[str], sdk: bool, work: Path, model: str
) -> list[Any]:
    out: list[Any] = []
    for i, tree in enumerate(trees):
        tag = chr(ord("A") + i)
        vs.ROOT, vs.PG_DB = tree, f"toolnexus_bench_trees_{tag.lower()}"
        (work / tag).mkdir()
        for server in vs.make_servers(work / tag, model, chosen):
            server.__class__ = TreeServer
            server.tree, server.name = tree, f"{tag} {server.name}"
            out.append(server)
    if sdk:
        out += vs.make_servers(work, model, ["sdk memory"])
    return out


async def run(args: argparse.Namespace) -> None:
    fake = subprocess.Popen(
        [vs.PY, str(vs.HERE / "loadclient.py")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert fake.stdout is not None and fake.stdin is not None
    work = Path(tempfile.mkdtemp(prefix="tnx-e2e-trees-"))
    servers = servers_of(args.trees, args.servers, args.sdk, work, fake.stdout.readline().strip())
    results: dict[str, list[dict[str, Any]]] = {s.name: [] for s in servers}
    try:
        for server in servers:
            server.start()
        for server in servers:
            await server.ready()
            await vs.end_to_end(server, 16, 200)  # warm-up
        for round_ in range(args.rounds):
            for server in servers if round_ % 2 == 0 else servers[::-1]:
                url = server.env.get("DATABASE_URL", "")
                database = (
                    url.rsplit("/", 1)[-1].split("?")[0] if url.startswith("postgres") else ""
                )
                before = backend_cpu(database) if database else 0.0
                result = await vs.end_to_end(server, 16, args.tasks)
                if database:
                    result["pg_ms_per_task"] = (
                        1000 * (backend_cpu(database) - before) / max(1, result["done"])
                    )
                results[server.name].append(result)
                load = os.getloadavg()[0]
                print(f"{round_} {server.name:<22} {line(result)}  p50 {result['p50_ms']:.0f} ms  "
                      f"done {result['done']}  load {load:.1f}", flush=True)  # fmt: skip
    finally:
        for server in servers:
            server.stop()
        fake.stdin.close()
        fake.wait(10)
        import psycopg

        with psycopg.connect(vs.PG_ADMIN, autocommit=True) as conn:
            for i in range(len(args.trees)):
                name = f"toolnexus_bench_trees_{chr(ord('a') + i)}"
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    print("medians over rounds:")
    for name, rows in results.items():
        print(
            f"  {name:<22} {line({k: statistics.median(r.get(k, 0) for r in rows) for k in KEYS})}"
        )


KEYS = ("tasks_per_s", "cpu_ms_per_task", "pg_ms_per_task")


def line(result: dict[str, Any]) -> str:
    return (
        f"{result['tasks_per_s']:6.1f} Tasks/s  {result['cpu_ms_per_task']:5.2f} ms/Task  "
        f"PG backends {result.get('pg_ms_per_task', 0):4.2f} ms/Task"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--trees", nargs="+", type=lambda p: Path(p).resolve(), required=True)
    parser.add_argument("--servers", nargs="+", default=["toolnexus postgres"])
    parser.add_argument("--sdk", action="store_true", help="the SDK's in-memory server too")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=1000)
    asyncio.run(run(parser.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
