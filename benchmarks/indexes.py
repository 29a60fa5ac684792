"""TaskRecord at a million rows: does GetTask and "Tasks in state X" stay fast?

Not a test. Fills a scratch database with N TaskRecord rows (default 1,000,000)
spread over states and owners (with token sums), and rows // 10 events, tool
call outcomes and push deliveries, then times the store's hot queries and
each chart of the admin's dashboard (each must stay under 50 ms at a million
Tasks), and prints the plans:

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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: Users owning the filled Tasks (round robin).
OWNERS = 50
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


def owners() -> int:
    """OWNERS users to own the Tasks (the dashboard's tokens per owner); the first's id."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    users.bulk_create([users.model(username=f"owner-{n}") for n in range(OWNERS)])
    return int(users.order_by("pk").values_list("pk", flat=True)[0])


def fill(rows: int, postgres: bool) -> float:
    from django.db import connection

    start = time.perf_counter()
    first_owner = owners()
    with connection.cursor() as cur:
        if postgres:
            states = ",".join(f"'{s}'" for s in STATES)
            cur.execute(
                f"""
                INSERT INTO toolnexus_django_taskrecord
                    (id, context_id, state, owner_id, task, private, created_at, updated_at,
                     revision, lease_owner, attempts, event_seq, input_tokens, output_tokens)
                SELECT 't-' || i, 'c-' || (i / 3),
                       (ARRAY[{states}])[1 + (i % 100)],
                       {first_owner} + i % {OWNERS},
                       jsonb_build_object('id', 't-' || i, 'kind', 'task',
                           'status', jsonb_build_object('state', 'completed'),
                           'artifacts', jsonb_build_array(jsonb_build_object(
                               'artifactId', md5(i::text), 'parts', jsonb_build_array(
                                   jsonb_build_object('kind', 'text', 'text', repeat('x', 200)))))),
                       '{{}}'::jsonb,
                       now() - (i || ' seconds')::interval, now() - (i || ' seconds')::interval,
                       0, '', 0, 0, 500 + i % 2000, 50 + i % 300
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
                     revision, lease_owner, attempts, event_seq, input_tokens, output_tokens)
                SELECT 't-' || i, 'c-' || (i / 3),
                       CASE WHEN i % 100 < 90 THEN 'completed' WHEN i % 100 < 95 THEN 'failed'
                            WHEN i % 100 < 98 THEN 'input-required' ELSE 'working' END,
                       {first_owner} + i % {OWNERS},
                       json_object('id', 't-' || i, 'kind', 'task',
                           'status', json_object('state', 'completed'),
                           'artifacts', json_array(json_object('artifactId', hex(i),
                               'parts', json_array(json_object('kind', 'text',
                                   'text', printf('%.200c', 'x')))))),
                       '{{}}',
                       datetime('now', '-' || i || ' seconds'),
                       datetime('now', '-' || i || ' seconds'),
                       0, '', 0, 0, 500 + i % 2000, 50 + i % 300
                FROM seq
                """
            )
            cur.execute("ANALYZE")
    return time.perf_counter() - start


def fill_dashboard(rows: int, postgres: bool) -> None:
    """The dashboard's other tables: rows // 10 events (a fifth of them
    answers), tool call outcomes and push deliveries, spread over a week."""
    from django.db import connection
    from django.utils import timezone

    from toolnexus_django.models import PushConfig, TaskRecord

    n = max(1, rows // 10)
    tasks = TaskRecord.objects.order_by("pk").values_list("pk", flat=True)[:1000]
    PushConfig.objects.bulk_create(
        PushConfig(task_id=t, config_id="c", url="https://hooks.example/", failures=k % 3,
                   disabled_at=None if k % 50 else timezone.now())
        for k, t in enumerate(tasks)
    )  # fmt: skip
    config = PushConfig.objects.order_by("pk").values_list("pk", flat=True).first()
    if postgres:
        rows_of, ago = f"generate_series(1, {n}) AS s(i)", "now() - (i * 6 || ' seconds')::interval"
        head, err = "", "CASE WHEN i % 7 = 0 THEN '{\"is_error\": true}' ELSE '{}' END::jsonb"
    else:
        head = f"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) "
        rows_of, ago = "s", "datetime('now', '-' || (i * 6) || ' seconds')"
        err = "CASE WHEN i % 7 = 0 THEN '{\"is_error\": true}' ELSE '{}' END"
    with connection.cursor() as cur:
        cur.execute(
            f"{head}INSERT INTO toolnexus_django_taskevent (task_id, seq, kind, from_state, "
            "to_state, at, actor, actor_kind, via, public, private) "
            f"SELECT 't-' || (1 + i % {rows}), 1000000 + i, "
            "CASE WHEN i % 5 = 0 THEN 'answer' ELSE 'claim' END, 'input-required', 'working', "
            f"{ago}, 'reviewer-' || (i % 20), 'user', 'admin', '{{}}', '{{}}' FROM {rows_of}"
        )
        cur.execute(
            f"{head}INSERT INTO toolnexus_django_toolcalloutcome (task_id, turn, call_id, tool, "
            f"result, created_at) SELECT 't-' || i, 0, 'c', 'tool-' || (i % 12), {err}, {ago} "
            f"FROM {rows_of}"
        )
        cur.execute(
            f"{head}INSERT INTO toolnexus_django_pushdelivery (config_id, seq, notification_id, "
            "attempt, at, outcome, error) "
            f"SELECT {config}, i, 'n' || i, 1, {ago}, "
            f"CASE WHEN i % 10 = 0 THEN 'retry' ELSE 'delivered' END, '' FROM {rows_of}"
        )
        cur.execute("ANALYZE" if not postgres else "VACUUM ANALYZE")


def dashboard_queries() -> list[tuple[str, Any]]:
    """Each chart of the admin's dashboard (admin/dashboard.py): its queries
    and its SVG, as the page makes them."""
    from django.utils import timezone

    from toolnexus_django.admin import dashboard as d

    return [
        ("dashboard: open tasks by state", d.open_tasks),
        ("dashboard: tasks per hour (24 h)", lambda: d.tasks_per_hour(timezone.now())),
        ("dashboard: review queue", lambda: d.review_queue(timezone.now())),
        ("dashboard: decisions per reviewer", lambda: d.decisions(timezone.now())),
        ("dashboard: tool failures", lambda: d.tool_failures(timezone.now())),
        ("dashboard: push health", lambda: d.push_health(timezone.now())),
        ("dashboard: tokens per owner + day", lambda: d.tokens(timezone.now())),
    ]


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
    fill_dashboard(args.rows, args.postgres)
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
        *dashboard_queries(),
    ]:
        # A dashboard chart is one page view: fewer repeats.
        repeats = max(5, args.repeats // 15) if name.startswith("dashboard") else args.repeats
        median, p99 = timed(fn, repeats)
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
