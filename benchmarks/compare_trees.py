"""Side by side: the end-to-end throughput of ``toolnexus_serve`` from two
source trees (e.g. a commit checked out as a git worktree, and the work tree),
interleaved round by round so that a noisy neighbour hits both alike.

Not a test. Each cell is throughput.py's ``run_cell`` (fresh database, fake
model, ``manage.py toolnexus_serve``, N polling clients, checks), with the
server started from the given tree: ``cwd=<tree>``, ``PYTHONPATH=<tree>``, so
the tree's own ``toolnexus_django`` and ``testproject`` are imported, not the
venv's editable install. Each tree migrates a scratch database of its own
(their migrations may differ). The same Python (this one) runs both.

    .venv/bin/python benchmarks/compare_trees.py --before /tmp/tnx-before --after . \\
        --db postgres sqlite --latency 0 200 --workers 2 --conn-max-age 60 --repeat 5

Per round and per (database, latency): BEFORE, then AFTER. The table shows the
median over rounds of each, the ratio of the medians, and the median of the
per-round (paired) ratios. Besides the server's CPU per Task (all processes of
its group, from /proc, as servers.py does), on PostgreSQL the CPU of the
database backends serving the cell's database (pg_stat_activity pids, from
/proc) is counted too, since an extra INSERT costs mostly there.

``--count-sql`` instead runs, per tree and database, one server (1 worker,
instant model) with a counter on every SQL statement its processes execute
(a ``connection_created`` hook installed by a generated sitecustomize.py), one
client that sends N messages one after another (polling each to its end), then
M GetTasks of a completed Task; it prints statements per Task and per GetTask,
by verb and table, and on PostgreSQL the database's commits and rows written.

PostgreSQL: 127.0.0.1:5432 as user postgres; scratch databases
``toolnexus_bench_cmp_<tag>`` and ``toolnexus_bench_cmp_<tag>_cell`` are
created and dropped. Loopback only; everything started here is stopped here.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import throughput as tp
from servers import free_port

PY = sys.executable

# -- a tree ------------------------------------------------------------------------


def tree_env(tree: Path, env: dict[str, str], extra_path: str = "") -> dict[str, str]:
    env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), extra_path) if p)
    return env


def which_package(tree: Path) -> tuple[str, bool]:
    """The ``toolnexus_django`` a process started like the server imports, and
    whether it has a ``lifecycle`` package."""
    out = subprocess.run(
        [PY, "-c", "import os, toolnexus_django as t; d = os.path.dirname(t.__file__); "
         "print(t.__file__); print(os.path.isdir(os.path.join(d, 'lifecycle')))"],
        cwd=tree, env=tree_env(tree, dict(os.environ)), capture_output=True, text=True,
        check=True,
    ).stdout.split()  # fmt: skip
    return out[0], out[1] == "True"


def migrate(tree: Path, url: str) -> None:
    env = tree_env(
        tree, {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "testproject.settings"}
    )
    subprocess.run(
        [PY, str(tree / "manage.py"), "migrate", "-v0"], cwd=tree, env=env, check=True, timeout=180
    )


def server_class(tree: Path, extra_path: str = "") -> type[tp.Server]:
    class TreeServer(tp.Server):
        """throughput.Server, started from ``tree``."""

        def __init__(self, workers: int, threads: int, env: dict[str, str], log: Path) -> None:
            self.port = free_port()
            self.workers = workers
            self.log = log
            self._out = log.open("wb")
            self.proc = subprocess.Popen(
                [PY, str(tree / "manage.py"), "toolnexus_serve", f"127.0.0.1:{self.port}",
                 "--workers", str(workers), "--threads", str(threads)],
                cwd=tree, env=tree_env(tree, env, extra_path), stdout=self._out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    return TreeServer


# -- databases, one set per tree ---------------------------------------------------


class TreePostgres(tp.Postgres):
    def __init__(self, server: str, tree: Path, tag: str) -> None:
        super().__init__(server)
        self.tree = tree
        self.template = f"toolnexus_bench_cmp_{tag.lower()}"
        self.cell = f"toolnexus_bench_cmp_{tag.lower()}_cell"
        self.last_url = ""

    def prepare(self) -> None:
        with self._admin() as c:
            c.execute(f"DROP DATABASE IF EXISTS {self.cell} WITH (FORCE)")
            c.execute(f"DROP DATABASE IF EXISTS {self.template} WITH (FORCE)")
            c.execute(f"CREATE DATABASE {self.template}")
        migrate(self.tree, f"{self.server}/{self.template}")

    def fresh(self) -> str:
        with self._admin() as c:
            c.execute(f"DROP DATABASE IF EXISTS {self.cell} WITH (FORCE)")
            c.execute(f"CREATE DATABASE {self.cell} TEMPLATE {self.template}")
        self.last_url = f"{self.server}/{self.cell}"
        return self.last_url

    def cleanup(self) -> None:
        with self._admin() as c:
            c.execute(f"DROP DATABASE IF EXISTS {self.cell} WITH (FORCE)")
            c.execute(f"DROP DATABASE IF EXISTS {self.template} WITH (FORCE)")

    def backend_cpu_seconds(self) -> float:
        """user+system CPU of the backends now connected to the cell database."""
        with self._admin() as c:
            pids = [
                r[0]
                for r in c.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.cell,)
                ).fetchall()
            ]
        return sum(proc_cpu_seconds(pid) for pid in pids)

    def db_stats(self) -> dict[str, int]:
        with self._admin() as c:
            row = c.execute(
                "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted "
                "FROM pg_stat_database WHERE datname = %s",
                (self.cell,),
            ).fetchone()
        keys = ("commits", "rollbacks", "inserted", "updated", "deleted")
        return dict(zip(keys, (int(x) for x in row), strict=True)) if row else {}

    def events(self, url: str) -> int | None:
        import psycopg

        with psycopg.connect(url) as c:
            exists = c.execute("SELECT to_regclass('toolnexus_django_taskevent')").fetchone()[0]
            if exists is None:
                return None
            return int(c.execute("SELECT count(*) FROM toolnexus_django_taskevent").fetchone()[0])


class TreeSqlite(tp.Sqlite):
    def __init__(self, workdir: Path, tree: Path, tag: str) -> None:
        super().__init__(workdir / tag)
        self.tree = tree
        self.last_url = ""

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        migrate(self.tree, f"sqlite:///{self.template}")

    def fresh(self) -> str:
        self.last_url = super().fresh()
        return self.last_url

    def events(self, url: str) -> int | None:
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as c:
            if not c.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'toolnexus_django_taskevent'"
            ).fetchone():
                return None
            return int(c.execute("SELECT count(*) FROM toolnexus_django_taskevent").fetchone()[0])


def proc_cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the comparison ----------------------------------------------------------------


def run_one(tree: Path, db: Any, cell: tp.Cell, args: argparse.Namespace, workdir: Path,
            round_: int, tag: str, spy: Path | None = None,
            ) -> tuple[tp.Result, float | None, float | None]:  # fmt: skip
    """throughput.run_cell with the server from ``tree``; also the database
    backends' CPU ms per Task (PostgreSQL) and events per Task in the cell's
    database (None: no event table). With ``spy``, py-spy records one worker
    (the samples holding the GIL) from the window's start, into that file."""
    tp.Server = server_class(tree)  # run_cell looks the class up by name
    samples: list[float] = []
    group_cpu = tp.group_cpu_seconds
    spies: list[subprocess.Popen[bytes]] = []

    def sampled(pgid: int) -> float:  # run_cell calls it at the window's start and end
        if isinstance(db, TreePostgres):
            samples.append(db.backend_cpu_seconds())
        if spy is not None and not spies:
            spies.append(start_spy(pgid, spy, min(args.py_spy, args.duration)))
        return group_cpu(pgid)

    tp.group_cpu_seconds = sampled
    try:
        result = tp.run_cell(cell, db, args, workdir / tag, round_)
    finally:
        tp.group_cpu_seconds = group_cpu
        for p in spies:
            p.wait(60)
    window = args.duration
    done = max(1.0, result.tasks_per_s * window)
    backend_ms = (samples[1] - samples[0]) * 1000 / done if len(samples) == 2 else None
    events = db.events(db.last_url)
    states = db.states(db.last_url)
    tasks = sum(states.values())
    per_task = events / tasks if events is not None and tasks else None
    return result, backend_ms, per_task


SPY_RATE = 250
#: What a py-spy sample is counted as: the first of these its stack contains.
SPY_PARTS = (
    ("event INSERT (store._add_event)", "_add_event ("),
    ("BEGIN (Atomic.__enter__)", "Atomic.__enter__"),
    ("COMMIT (Atomic.__exit__)", "Atomic.__exit__"),
    ("other SQL (CursorWrapper._execute)", "CursorWrapper._execute"),
    ("rest of the runs (run_fulfilment)", "run_fulfilment ("),
    ("rest of the HTTP requests", "WSGIHandler.__call__"),
)


def start_spy(pgid: int, out: Path, seconds: float) -> subprocess.Popen[bytes]:
    """py-spy on the first worker of the server whose master is ``pgid``."""
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pgid:
                kids.append(int(entry.name))
    spy = str(Path(PY).with_name("py-spy"))
    return subprocess.Popen(
        [spy, "record", "--pid", str(min(kids)), "--duration", f"{seconds:.0f}",
         "--rate", str(SPY_RATE), "--nonblocking", "--gil", "--format", "raw",
         "--output", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def spy_parts(raw: Path) -> Counter[str]:
    parts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        name = next((k for k, p in SPY_PARTS if p in stack), "other")
        parts[name] += int(n)
    return parts


def db_names(args: argparse.Namespace) -> list[str]:
    return [n for n, key in (("PostgreSQL", "postgres"), ("SQLite", "sqlite")) if key in args.db]


def compare(args: argparse.Namespace, trees: dict[str, Path], workdir: Path) -> int:
    dbs: dict[tuple[str, str], Any] = {}
    for tag, tree in trees.items():
        (workdir / tag).mkdir(parents=True, exist_ok=True)
        if "postgres" in args.db:
            dbs[(tag, "PostgreSQL")] = TreePostgres(args.pg, tree, tag)
        if "sqlite" in args.db:
            dbs[(tag, "SQLite")] = TreeSqlite(workdir, tree, tag)
    names = db_names(args)
    cells = [
        tp.Cell(name, latency, args.workers, args.clients)
        for name in names
        for latency in args.latency
    ]
    runs: dict[tuple[str, int], list[tuple[tp.Result, float | None, float | None]]] = {}
    try:
        for line in tp.machine([dbs[(next(iter(trees)), n)] for n in names]):
            print(line)
        print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
        print(
            f"{len(cells)} cells x {len(trees)} trees x {args.repeat} rounds: {args.warmup:g}s "
            f"warm-up + {args.duration:g}s measured each; {args.clients} clients, --workers "
            f"{args.workers}, --threads {args.threads}, poll {args.poll * 1000:g} ms, "
            f"DATABASE_CONN_MAX_AGE {args.conn_max_age}; logs in {workdir}",
            flush=True,
        )
        for db in dbs.values():
            db.prepare()
        for round_ in range(1, args.repeat + 1):
            print(f"round {round_}/{args.repeat} (load average {os.getloadavg()[0]:.2f})")
            for i, cell in enumerate(cells):
                for tag, tree in trees.items():
                    t0 = time.monotonic()
                    spy = workdir / f"{tag}-{i}-r{round_}.spy" if args.py_spy else None
                    res = run_one(tree, dbs[(tag, cell.db)], cell, args, workdir, round_, tag, spy)
                    runs.setdefault((tag, i), []).append(res)
                    r, backend_ms, events = res
                    print(
                        f"  {tag:<6} {cell.db:<10} {cell.latency_ms:>4g} ms  "
                        f"{r.tasks_per_s:6.1f} tasks/s  server CPU {r.cpu_ms_per_task:5.2f} ms/task"
                        + (f"  PG backends {backend_ms:5.2f} ms/task" if backend_ms else "")
                        + f"  events/task {'-' if events is None else f'{events:.2f}'}"
                        f"  e2e {r.e2e_ms[0]:.0f}/{r.e2e_ms[1]:.0f} ms"
                        f"  GetTask/task {r.gets_per_task:.1f}"
                        f"  bad {r.bad} twice {r.twice} left {r.left} "
                        f"log {r.log_problems} exit {r.exit_code}"
                        f"  ({time.monotonic() - t0:.1f}s)"
                        + ("  " + "; ".join(r.notes) if r.notes else ""),
                        flush=True,
                    )  # fmt: skip
    finally:
        for db in dbs.values():
            try:
                db.cleanup()
            except Exception as exc:
                print(f"cleanup of {db.name} failed: {exc}", file=sys.stderr)
    print(f"\nload average after: {Path('/proc/loadavg').read_text().strip()}\n")

    before, after = list(trees)
    print(
        "| database | model | BEFORE tasks/s | AFTER tasks/s | AFTER/BEFORE (medians) "
        "| paired ratio median (min-max) | BEFORE CPU ms/task | AFTER CPU ms/task "
        "| AFTER/BEFORE CPU | PG backend CPU ms/task B → A | e2e median ms B → A "
        "| GetTask/task B → A | events/task B → A | problems |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|---|")
    for i, cell in enumerate(cells):
        b, a = runs[(before, i)], runs[(after, i)]
        bt = statistics.median(x[0].tasks_per_s for x in b)
        at = statistics.median(x[0].tasks_per_s for x in a)
        paired = [
            y[0].tasks_per_s / x[0].tasks_per_s
            for x, y in zip(b, a, strict=True)
            if x[0].tasks_per_s
        ]
        bc = statistics.median(x[0].cpu_ms_per_task for x in b)
        ac = statistics.median(x[0].cpu_ms_per_task for x in a)

        def med(xs: list[float | None]) -> str:
            v = [x for x in xs if x is not None]
            return f"{statistics.median(v):.2f}" if v else "-"

        pg = f"{med([x[1] for x in b])} → {med([x[1] for x in a])}"
        ev = f"{med([x[2] for x in b])} → {med([x[2] for x in a])}"
        e2e = f"{med([x[0].e2e_ms[0] for x in b])} → {med([x[0].e2e_ms[0] for x in a])}"
        polls = f"{med([x[0].gets_per_task for x in b])} → {med([x[0].gets_per_task for x in a])}"
        problems = sum(
            x[0].bad + x[0].twice + x[0].left + x[0].log_problems + (x[0].exit_code != 0)
            for x in b + a
        )
        print(
            f"| {cell.db} | {cell.latency_ms:g} ms | {bt:.1f} | {at:.1f} | {at / bt:.3f} "
            f"| {statistics.median(paired):.3f} ({min(paired):.2f}-{max(paired):.2f}) "
            f"| {bc:.2f} | {ac:.2f} | {ac / bc:.3f} | {pg if cell.db == 'PostgreSQL' else '-'} "
            f"| {e2e} | {polls} | {ev} | {problems} |"
        )
    if args.py_spy:
        seconds = min(args.py_spy, args.duration)
        print(
            f"\npy-spy --gil on one of {args.workers} workers for {seconds:g} s (median round): "
            f"ms of Python holding the GIL per Task, taking that worker's share as "
            f"1/{args.workers} of the Tasks"
        )
        names = [k for k, _ in SPY_PARTS] + ["other"]
        print("| database | model | tree | total | " + " | ".join(names) + " |")
        print("|---|---|---|---:|" + "---:|" * len(names))
        for i, cell in enumerate(cells):
            for tag in trees:
                per: dict[str, list[float]] = {k: [] for k in ["total", *names]}
                for round_, (r, _, _) in enumerate(runs[(tag, i)], 1):
                    raw = workdir / f"{tag}-{i}-r{round_}.spy"
                    if not raw.exists() or not r.tasks_per_s:
                        continue
                    parts = spy_parts(raw)
                    tasks = r.tasks_per_s * seconds / args.workers
                    scale = 1000 / SPY_RATE / tasks
                    per["total"].append(sum(parts.values()) * scale)
                    for k in names:
                        per[k].append(parts[k] * scale)
                cols = " | ".join(
                    f"{statistics.median(per[k]):.2f}" if per[k] else "-" for k in ["total", *names]
                )
                print(f"| {cell.db} | {cell.latency_ms:g} ms | {tag} | {cols} |")
    print("\nper round, tasks/s B/A and CPU ms/task B/A:")
    for i, cell in enumerate(cells):
        pairs = "  ".join(
            f"{x[0].tasks_per_s:.0f}/{y[0].tasks_per_s:.0f} ({x[0].cpu_ms_per_task:.1f}/"
            f"{y[0].cpu_ms_per_task:.1f})"
            for x, y in zip(runs[(before, i)], runs[(after, i)], strict=True)
        )
        print(f"  {cell.db} {cell.latency_ms:g} ms: {pairs}")
    return 0


# -- counting SQL statements ---------------------------------------------------------

SITECUSTOMIZE = r"""
# Generated by benchmarks/compare_trees.py --count-sql: count every SQL statement
# that a forked server process executes through Django, by verb and table.
import json, os, re, threading, time
from collections import Counter

_DIR = os.environ.get("TNX_SQLCOUNT_DIR")
_MASTER = os.getpid()
if _DIR:
    _counts = Counter()
    _lock = threading.Lock()
    _started = [0]
    _table = re.compile(r'\b(?:FROM|INTO|UPDATE)\s+"?(\w+)"?', re.I)

    def _dump():
        import sys
        path = os.path.join(_DIR, f"{os.getpid()}.json")
        while True:
            time.sleep(0.2)
            with _lock:
                data = dict(_counts)
            mod = sys.modules.get("toolnexus_django")
            data["__package__"] = getattr(mod, "__file__", "")
            with open(path + ".tmp", "w") as f:
                json.dump(data, f)
            os.replace(path + ".tmp", path)

    def _wrapper(execute, sql, params, many, context):
        words = sql.lstrip().split(None, 1)
        verb = words[0].upper() if words else "?"
        if verb in ("INSERT", "UPDATE", "DELETE", "SELECT"):
            m = _table.search(sql)
            verb = f"{verb} {m.group(1) if m else '?'}"
        with _lock:
            _counts[verb] += 1
        return execute(sql, params, many, context)

    def _on_connection(sender, connection, **kwargs):
        if _wrapper not in connection.execute_wrappers:
            connection.execute_wrappers.append(_wrapper)
        if os.getpid() != _MASTER and _started[0] != os.getpid():
            _started[0] = os.getpid()
            threading.Thread(target=_dump, daemon=True).start()

    from django.db.backends.signals import connection_created
    connection_created.connect(_on_connection, weak=False)
"""


def read_counts(d: Path) -> tuple[Counter[str], set[str]]:
    total: Counter[str] = Counter()
    packages: set[str] = set()
    for f in d.glob("*.json"):
        data = json.loads(f.read_text())
        packages.add(data.pop("__package__", ""))
        total.update(data)
    return total, packages


def count_sql(args: argparse.Namespace, trees: dict[str, Path], workdir: Path) -> int:
    site = workdir / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    report: dict[tuple[str, str], dict[str, Any]] = {}
    for name in db_names(args):
        for tag, tree in trees.items():
            (workdir / tag).mkdir(parents=True, exist_ok=True)
            db: Any = (
                TreePostgres(args.pg, tree, tag + "_sql")
                if name == "PostgreSQL"
                else TreeSqlite(workdir, tree, tag + "_sql")
            )
            counts_dir = workdir / f"counts-{tag}-{name}"
            counts_dir.mkdir()
            try:
                db.prepare()
                url = db.fresh()
                fake = tp.FakeModel(0, workdir / f"count-{tag}-{name}-fake.log")
                env = {
                    k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "TOOLNEXUS_"))
                }
                env.update({
                    "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "testproject.settings",
                    "DATABASE_CONN_MAX_AGE": str(args.conn_max_age), "TOOLNEXUS_STORE": "django",
                    "TOOLNEXUS_LOG_LEVEL": args.log_level, "LLM_BASE_URL": fake.url,
                    "LLM_STYLE": "openai", "LLM_RETRIES": "0", "PYTHONUNBUFFERED": "1",
                    "TNX_SQLCOUNT_DIR": str(counts_dir),
                })  # fmt: skip
                server = server_class(tree, str(site))(
                    1, args.threads, env, workdir / f"count-{tag}-{name}-serve.log"
                )
                try:
                    server.wait_ready()
                    rpc = tp.Rpc(server.port)
                    # one Task first, so every connection and cache is warm
                    first = rpc.call("SendMessage", {"message": message("warm")})[0]["id"]
                    wait_final(rpc, first, args.poll)
                    time.sleep(2)
                    c0, _ = read_counts(counts_dir)
                    s0 = db.db_stats() if name == "PostgreSQL" else {}
                    gets = 0
                    for n in range(args.sql_tasks):
                        task = rpc.call("SendMessage", {"message": message(f"c-{n}")})[0]
                        gets += wait_final(rpc, task["id"], args.poll)
                    time.sleep(2)
                    c1, _ = read_counts(counts_dir)
                    s1 = db.db_stats() if name == "PostgreSQL" else {}
                    for _ in range(args.sql_gets):
                        rpc.call("GetTask", {"id": first})
                    time.sleep(2)
                    c2, packages = read_counts(counts_dir)
                    rpc.close()
                finally:
                    server.stop()
                    fake.calls()
                tasks_phase = c1 - c0
                gets_phase = c2 - c1
                report[(tag, name)] = {
                    "packages": packages - {""},
                    "tasks": args.sql_tasks,
                    "polls": gets,
                    "per_task_incl_polls": {k: v / args.sql_tasks for k, v in tasks_phase.items()},
                    "per_get": {k: v / args.sql_gets for k, v in gets_phase.items()},
                    "pg_per_task": {k: (s1[k] - s0[k]) / args.sql_tasks for k in s1} if s1 else {},
                    "events": db.events(url),
                }
            finally:
                db.cleanup()
    for (tag, name), r in report.items():
        total_task = sum(r["per_task_incl_polls"].values())
        total_get = sum(r["per_get"].values())
        polls = r["polls"] / r["tasks"]
        print(f"\n{tag} {name}: toolnexus_django from {', '.join(sorted(r['packages']))}")
        print(
            f"  {r['tasks']} Tasks, {polls:.2f} GetTask polls per Task; statements per Task "
            f"(SendMessage + run + polls): {total_task:.2f}; per GetTask: {total_get:.2f}; "
            f"per Task without its polls: {total_task - polls * total_get:.2f}; "
            f"TaskEvent rows at the end: {r['events']}"
        )
        for k, v in sorted(r["per_task_incl_polls"].items(), key=lambda kv: -kv[1]):
            print(f"    {v:6.2f}  {k}")
        print(f"  per GetTask: {dict(sorted(r['per_get'].items()))}")
        if r["pg_per_task"]:
            print(f"  pg_stat_database per Task (incl. polls): {r['pg_per_task']}")
    return 0


def message(key: str) -> dict[str, Any]:
    return {
        "role": "user",
        "messageId": f"m-{key}",
        "parts": [{"kind": "text", "text": f"[tp {key}] Please answer."}],
    }


def wait_final(rpc: tp.Rpc, task_id: str, poll: float) -> int:
    polls = 0
    while True:
        time.sleep(poll)
        task = rpc.call("GetTask", {"id": task_id})[0]
        polls += 1
        if task["status"]["state"] in tp.FINAL:
            if task["status"]["state"] != "completed":
                raise RuntimeError(f"{task_id}: {task['status']['state']}")
            return polls


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, required=True, help="the BEFORE tree")
    parser.add_argument("--after", type=Path, required=True, help="the AFTER tree")
    parser.add_argument(
        "--db", nargs="+", choices=["postgres", "sqlite"], default=["postgres", "sqlite"]
    )
    parser.add_argument("--latency", nargs="+", type=float, default=[0, 200])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--duration", type=float, default=8)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--poll", type=float, default=0.05)
    parser.add_argument("--repeat", "-r", type=int, default=3)
    parser.add_argument("--task-timeout", type=float, default=30, help=argparse.SUPPRESS)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--conn-max-age", type=int, default=60)
    parser.add_argument(
        "--py-spy", type=float, default=0,
        help="record one worker with py-spy --gil for this many seconds of each window",
    )  # fmt: skip
    parser.add_argument("--count-sql", action="store_true", help="count statements instead")
    parser.add_argument("--sql-tasks", type=int, default=40)
    parser.add_argument("--sql-gets", type=int, default=40)
    args = parser.parse_args()

    trees = {"BEFORE": args.before.resolve(), "AFTER": args.after.resolve()}
    for tag, tree in trees.items():
        path, lifecycle = which_package(tree)
        print(f"{tag}: {tree}; imports {path}; lifecycle package: {lifecycle}")
        if not path.startswith(str(tree) + os.sep):
            raise SystemExit(f"{tag} would import {path}, not its own toolnexus_django")
    workdir = Path(tempfile.mkdtemp(prefix="tnx-cmp-"))
    if args.count_sql:
        return count_sql(args, trees, workdir)
    return compare(args, trees, workdir)


if __name__ == "__main__":
    sys.exit(main())
