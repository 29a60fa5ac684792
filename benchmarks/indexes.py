"""TaskRecord at a million rows: does GetTask and "Tasks in state X" stay fast?

Not a test. Fills a scratch database with N TaskRecord rows (default 1,000,000)
spread over states and owners, then times the store's hot queries and prints
their plans:

    .venv/bin/python benchmarks/indexes.py                    # SQLite (scratch file)
    .venv/bin/python benchmarks/indexes.py --postgres         # PostgreSQL 127.0.0.1:5432
    .venv/bin/python benchmarks/indexes.py --rows 200000

PostgreSQL uses a scratch database ``toolnexus_bench`` (created, then dropped).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STATES = ["completed"] * 90 + ["failed"] * 5 + ["input-required"] * 3 + ["working"] * 2


def setup_django(args: argparse.Namespace) -> str:
    if args.postgres:
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {args.pg_database}")
            c.execute(f"CREATE DATABASE {args.pg_database}")
        os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{args.pg_database}"
    else:
        scratch = Path(tempfile.mkdtemp(prefix="tnx-bench-")) / "bench.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{scratch}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return os.environ["DATABASE_URL"]


def fill(rows: int, postgres: bool) -> float:
    from django.db import connection

    start = time.perf_counter()
    with connection.cursor() as cur:
        if postgres:
            states = ",".join(f"'{s}'" for s in STATES)
            cur.execute(
                f"""
                INSERT INTO toolnexus_django_taskrecord
                    (id, context_id, state, owner_id, task, private, created_at, updated_at,
                     revision, lease_owner, attempts, event_seq)
                SELECT 't-' || i, 'c-' || (i / 3),
                       (ARRAY[{states}])[1 + (i % 100)],
                       NULL,
                       jsonb_build_object('id', 't-' || i, 'kind', 'task',
                           'status', jsonb_build_object('state', 'completed'),
                           'artifacts', jsonb_build_array(jsonb_build_object(
                               'artifactId', md5(i::text), 'parts', jsonb_build_array(
                                   jsonb_build_object('kind', 'text', 'text', repeat('x', 200)))))),
                       '{{}}'::jsonb,
                       now() - (i || ' seconds')::interval, now() - (i || ' seconds')::interval,
                       0, '', 0, 0
                FROM generate_series(1, {rows}) AS i
                """
            )
            cur.execute("ANALYZE toolnexus_django_taskrecord")
        else:
            cur.execute(
                f"""
                WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < {rows})
                INSERT INTO toolnexus_django_taskrecord
                    (id, context_id, state, owner_id, task, private, created_at, updated_at,
                     revision, lease_owner, attempts, event_seq)
                SELECT 't-' || i, 'c-' || (i / 3),
                       CASE WHEN i % 100 < 90 THEN 'completed' WHEN i % 100 < 95 THEN 'failed'
                            WHEN i % 100 < 98 THEN 'input-required' ELSE 'working' END,
                       NULL,
                       json_object('id', 't-' || i, 'kind', 'task',
                           'status', json_object('state', 'completed'),
                           'artifacts', json_array(json_object('artifactId', hex(i),
                               'parts', json_array(json_object('kind', 'text',
                                   'text', printf('%.200c', 'x')))))),
                       '{{}}',
                       datetime('now', '-' || i || ' seconds'),
                       datetime('now', '-' || i || ' seconds'),
                       0, '', 0, 0
                FROM seq
                """
            )
            cur.execute("ANALYZE")
    return time.perf_counter() - start


def timed(fn, repeats: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def plan(sql: str, params: list[object], postgres: bool) -> str:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(("EXPLAIN " if postgres else "EXPLAIN QUERY PLAN ") + sql, params)
        return " | ".join(str(r[-1]) for r in cur.fetchall())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument(
        "--pg-database", default="toolnexus_bench", help="the scratch database's name"
    )
    args = parser.parse_args()
    url = setup_django(args)

    from toolnexus_django.models import TaskRecord
    from toolnexus_django.stores import DjangoTaskStore

    seconds = fill(args.rows, args.postgres)
    store = DjangoTaskStore()
    rng = random.Random(7)

    def get_task() -> None:
        assert store.get(f"t-{rng.randint(1, args.rows)}") is not None

    def awaiting_page() -> None:
        list(TaskRecord.objects.awaiting_human().order_by("-updated_at").values_list("id")[:50])

    def working_page() -> None:
        list(TaskRecord.objects.in_state("working").order_by("-updated_at").values_list("id")[:50])

    def context() -> None:
        list(TaskRecord.objects.filter(context_id=f"c-{rng.randint(1, args.rows // 3)}"))

    working = [i for i in range(1, args.rows + 1) if i % 100 >= 98]  # the 'working' rows

    def save() -> None:
        # A finished Task is never overwritten (TerminalTaskError): upsert a working one.
        task = store.get(f"t-{rng.choice(working)}")
        assert task is not None
        task["status"] = {"state": "working"}
        store.save(task)

    print(f"database: {url.split('@')[-1]}  rows: {args.rows:,}  filled in {seconds:.1f}s")
    print(f"{'query':<40}{'median ms':>12}{'p99 ms':>10}")
    for name, fn in [
        ("GetTask (store.get by id)", get_task),
        ("store.save (upsert)", save),
        ("awaiting a human, newest 50", awaiting_page),
        ("state=working, newest 50", working_page),
        ("tasks of one contextId", context),
    ]:
        median, p99 = timed(fn, args.repeats)
        print(f"{name:<40}{median:>12.3f}{p99:>10.3f}")

    from django.db import connection

    qn = connection.ops.quote_name
    table = qn("toolnexus_django_taskrecord")
    print("\nplans:")
    print(" get:     ", plan(f"SELECT task FROM {table} WHERE id = %s", ["t-5"], args.postgres))
    print(
        " awaiting:",
        plan(
            f"SELECT id FROM {table} WHERE state IN (%s, %s) ORDER BY updated_at DESC LIMIT 50",
            ["input-required", "auth-required"],
            args.postgres,
        ),
    )
    if args.postgres:
        connection.close()
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {args.pg_database}")


if __name__ == "__main__":
    main()
