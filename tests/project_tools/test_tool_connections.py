"""The ORM inside tools stays within the process's connection budget (issue 19).

500 concurrent runs against ``manage.py toolnexus_serve --workers 2`` on
PostgreSQL. Each run's model calls a tool of benchmarks/orm_tools.py that
counts the users, writes a group, then works 1 s without the database — half
of the runs a plain ``toolnexus.tool``, half a ``toolnexus_django.tool`` —
and then says the tool's result back, so each Task's artifact is what its
tool returned. Every call must return its real result (none refused for want
of a connection: calls past the budget wait), and no server process may hold
more sessions in ``pg_stat_activity`` than the documented budget,
``DATABASE_THREADS + 4 + TOOL_THREADS``, sampled during the load; after it,
tools hold none. On main before issue 19 the sync case had 430 of 500 calls
refused and a process held 66 sessions (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Group

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Text, ToolCall
from tests.fakes.llm import Reply
from tests.pg_sessions import SessionWatch
from tests.servers import fake_env, serve
from toolnexus_django.models import TaskRecord
from toolnexus_django.tools.budget import OWN_CONNECTIONS, tool_threads

RUNS = 500
SENDERS = 50
#: The server's DATABASE_THREADS: 8, not 16, so the test's 2 processes hold at
#: most 2 x (8 + 4 + TOOL_THREADS) of the PostgreSQL it shares with other runs.
DATABASE_THREADS = 8
#: How long all runs may take to end once sent (≈ 16 s of tool time at the
#: default 16 tool threads x 2 processes).
DEADLINE = 240.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
        reason="counts sessions in pg_stat_activity (issue 19: 500 runs on PostgreSQL); "
        "set DATABASE_URL=postgres://... to run it",
    ),
]

CALL = re.compile(r"\[call (\w+) (\d+)\]")


def call_then_echo(body: dict[str, Any]) -> Reply | None:
    """The model: call the tool the message names, then say its result back."""
    messages = body.get("messages") or []
    results = [m for m in messages if m.get("role") == "tool"]
    if results:
        return Text(f"tool said: {results[-1]['content']}")
    asked = CALL.search(str(messages[-1].get("content")))
    return None if asked is None else ToolCall(asked.group(1), {"n": int(asked.group(2))})


def watch_sessions(pgid: int) -> SessionWatch:
    from django.db import connection

    s = connection.settings_dict
    host, port = s["HOST"] or "127.0.0.1", int(s["PORT"] or 5432)
    dsn = f"host={host} port={port} user={s['USER']} dbname={s['NAME']}"
    return SessionWatch(dsn, pgid, s["NAME"], port)


@pytest.mark.parametrize(
    "plain, django_tool, conn_max_age",
    [
        ("orm_sync", "dj_orm_sync", 0),
        ("orm_async", "dj_orm_async", 0),
        # Persistent connections: the first design never closed an async
        # call's (287 of 500 calls refused).
        ("orm_async", "dj_orm_async", 60),
    ],
    ids=["sync", "async", "async-persistent"],
)
def test_500_concurrent_runs_of_orm_tools_all_return_their_result_within_the_budget(
    plain: str, django_tool: str, conn_max_age: int, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.respond = call_then_echo
    env = {**fake_env(fake_llm), "DJANGO_SETTINGS_MODULE": "benchmarks.tool_settings",
           "TOOLNEXUS_BENCH_WORK": "1", "LLM_TIMEOUT_MS": "300000",
           "DATABASE_CONN_MAX_AGE": str(conn_max_age),
           "TOOLNEXUS_DATABASE_THREADS": str(DATABASE_THREADS)}  # fmt: skip
    budget = DATABASE_THREADS + OWN_CONNECTIONS + tool_threads()
    with serve(tmp_path, "--workers", "2", env=env) as server:
        endpoint = server.wait_ready()["url"]
        wait_until(lambda: server.output().count("Booting worker") >= 2, timeout=30,
                   what="2 workers")  # fmt: skip
        local = threading.local()

        def rpc() -> RpcClient:
            if not hasattr(local, "rpc"):
                local.rpc = RpcClient(endpoint)
            return local.rpc

        def send(n: int) -> str:
            tool = plain if n % 2 == 0 else django_tool
            return str(rpc().send(f"[call {tool} {n}]")["id"])

        with watch_sessions(server.proc.pid) as watch:
            t0 = time.monotonic()
            with ThreadPoolExecutor(SENDERS) as senders:
                ids = list(senders.map(send, range(RUNS)))
            last: Counter[str] = Counter()

            def all_ended() -> bool:
                nonlocal last
                last = Counter(
                    TaskRecord.objects.filter(pk__in=ids).values_list("state", flat=True)
                )
                return sum(last[s] for s in ("completed", "failed", "canceled")) == RUNS

            try:
                wait_until(all_ended, timeout=DEADLINE, interval=0.2, what="every run to end")
            except AssertionError:
                raise AssertionError(f"not every run ended in {DEADLINE}s: {dict(last)}") from None
            elapsed = time.monotonic() - t0
        after = watch.now()

        def artifact(n: int) -> str:
            task = rpc().get(ids[n])["result"]
            return " ".join(p["text"] for a in task.get("artifacts") or () for p in a["parts"])

        with ThreadPoolExecutor(16) as readers:
            said = list(readers.map(artifact, range(RUNS)))

    print(f"\n{RUNS} runs of {plain}/{django_tool}: all ended in {elapsed:.1f}s; sessions per "
          f"process: peak {dict(watch.peak)}, after {after} (budget {budget}, "
          f"{watch.samples} samples)")  # fmt: skip
    # Every call returned its own real result: none was refused a connection.
    wrong = [
        (n, text) for n, text in enumerate(said)
        if not re.fullmatch(rf"tool said: ok {n}: \d+ users, wrote group \d+", text)
    ]  # fmt: skip
    assert not wrong, f"{len(wrong)} calls did not return their result: {wrong[:3]}"
    assert Group.objects.filter(name__startswith="tool-call-").count() == RUNS
    # Within the budget in every process, during the load and after it; after
    # it the tools hold no session (only the app's own threads do) unless
    # connections persist, and then one per tool thread at most.
    assert watch.samples > 10 and len(watch.peak) >= 2, (watch.samples, watch.peak)
    assert max(watch.peak.values()) <= budget, (watch.peak, budget)
    held_by_tools = tool_threads() if conn_max_age else 0
    assert max(after.values()) <= budget - tool_threads() + held_by_tools, (after, budget)


def test_tools_work_on_django_connection_pool_under_toolnexus_serve(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    # OPTIONS["pool"] (Django >= 5.1): the master's pool, made by the checks
    # before the fork, was inherited by both workers, which then spoke on the
    # same sockets ("the last operation didn't produce records"). Each worker
    # must make its own.
    pytest.importorskip("psycopg_pool", reason="Django's pool needs psycopg[pool]")
    fake_llm.respond = call_then_echo
    pool = str(DATABASE_THREADS + OWN_CONNECTIONS + tool_threads())
    env = {**fake_env(fake_llm), "DJANGO_SETTINGS_MODULE": "benchmarks.tool_settings",
           "TOOLNEXUS_BENCH_WORK": "0", "TOOLNEXUS_BENCH_DB_POOL": pool,
           "TOOLNEXUS_DATABASE_THREADS": str(DATABASE_THREADS)}  # fmt: skip
    with serve(tmp_path, "--workers", "2", env=env) as server:
        rpc = RpcClient(server.wait_ready()["url"])
        wait_until(lambda: server.output().count("Booting worker") >= 2, timeout=30,
                   what="2 workers")  # fmt: skip
        ids = [
            rpc.send(f"[call {'orm_sync' if n % 2 else 'orm_async'} {n}]")["id"] for n in range(20)
        ]
        said = [
            rpc.wait(task_id, timeout=60)["artifacts"][0]["parts"][0]["text"] for task_id in ids
        ]
        output = server.output()
    assert [n for n, text in enumerate(said) if not text.startswith(f"tool said: ok {n}:")] == []
    assert "Traceback" not in output, output[-3000:]
