"""A bounded load run: 500 SendMessage calls from 16 concurrent clients against
``manage.py toolnexus_serve --workers 2`` on PostgreSQL.

Every Task must reach ``completed`` with its own answer (none lost), the model
must be called exactly once per Task (none run twice), and nothing may be
left ``submitted`` or ``working``. Timing is printed, never asserted (run with
``-s`` to see it); benchmarks/throughput.py is where speed is measured.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import RpcClient, wait_until
from tests.fakes import Fail, FakeLLM, Text
from tests.servers import fake_env, serve
from toolnexus_django.models import TaskRecord

TASKS = 500
CLIENTS = 16
WORKERS = 2
#: How long all 500 may take to reach a final state once they are sent.
DEADLINE = 120.0

MARKER = re.compile(r"load (\d+)\.")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
        reason="the load run is specified on PostgreSQL (issue 4): several server processes "
        "writing at once; set DATABASE_URL=postgres://... to run it",
    ),
]


def marker(n: int) -> str:
    # The trailing period keeps "load 1." from matching "load 10.".
    return f"load {n}."


def states(ids: list[str]) -> Counter[str]:
    return Counter(TaskRecord.objects.filter(pk__in=ids).values_list("state", flat=True))


def test_500_messages_from_16_clients_all_complete_once(fake_llm: FakeLLM, tmp_path: Path) -> None:
    for n in range(TASKS):
        fake_llm.on(marker(n), Text(f"r{n}"))
    # A second call for a marker whose answer was used up lands here: loud, and
    # counted below anyway.
    fake_llm.default = Fail(500, "fake-llm: no answer scripted (a Task ran twice?)")

    with serve(tmp_path, "--workers", str(WORKERS), env=fake_env(fake_llm)) as server:
        card = server.wait_ready()
        wait_until(
            lambda: server.output().count("Booting worker with pid") >= WORKERS,
            timeout=30,
            what=f"{WORKERS} workers",
        )
        endpoint = card["url"]

        # -- send: 16 clients, real HTTP, one RpcClient (id counter) per thread --
        local = threading.local()
        send_errors: list[str] = []

        def send(n: int) -> tuple[int, str | None]:
            rpc = getattr(local, "rpc", None)
            if rpc is None:
                rpc = local.rpc = RpcClient(endpoint)
            try:
                task = rpc.send(f"{marker(n)} Please answer with your code.")
            except (AssertionError, OSError) as exc:  # no retry: a lost send is a failure
                send_errors.append(f"message {n}: {exc!r}"[:300])
                return n, None
            assert task["status"]["state"] in ("submitted", "working", "completed"), task
            return n, task["id"]

        t0 = time.monotonic()
        with ThreadPoolExecutor(CLIENTS, thread_name_prefix="load-client") as pool:
            sent = dict(pool.map(send, range(TASKS)))
        t_sent = time.monotonic()
        assert not send_errors, f"{len(send_errors)} sends failed: {send_errors[:5]}"
        ids = [sent[n] for n in range(TASKS)]
        assert len(set(ids)) == TASKS, "every SendMessage made a Task of its own"

        # -- wait: read the states from the database (cheap), not 500 GetTasks --
        final = {"completed", "failed", "canceled", "rejected"}
        last: Counter[str] = Counter()

        def all_final() -> bool:
            nonlocal last
            last = states(ids)
            return sum(last[s] for s in final) == TASKS

        try:
            wait_until(all_final, timeout=DEADLINE, interval=0.1, what="all Tasks to finish")
        except AssertionError:
            raise AssertionError(
                f"not all Tasks finished within {DEADLINE}s: {dict(last)}"
            ) from None
        t_done = time.monotonic()

        # -- check each Task over HTTP, as a client would see it --
        def check(n: int) -> str | None:
            rpc = getattr(local, "rpc", None) or RpcClient(endpoint)
            local.rpc = rpc
            task = rpc.get(ids[n]).get("result") or {}
            state = task.get("status", {}).get("state")
            texts = [
                part.get("text")
                for artifact in task.get("artifacts") or ()
                for part in artifact.get("parts") or ()
            ]
            if state != "completed" or texts != [f"r{n}"]:
                return f"message {n} ({ids[n]}): {state}, {texts}"
            return None

        with ThreadPoolExecutor(CLIENTS, thread_name_prefix="load-check") as pool:
            wrong = [w for w in pool.map(check, range(TASKS)) if w]

        server.signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
        output = server.output()

    elapsed = t_done - t0
    print(
        f"\nload: {TASKS} SendMessage from {CLIENTS} clients, toolnexus_serve --workers {WORKERS} "
        f"on PostgreSQL: sent in {t_sent - t0:.1f}s ({TASKS / (t_sent - t0):.0f} sends/s), "
        f"all completed in {elapsed:.1f}s ({TASKS / elapsed:.1f} tasks/s)"
    )

    # None lost: every Task completed, with its own answer.
    assert not wrong, f"{len(wrong)} Tasks did not complete with their answer: {wrong[:5]}"
    assert states(ids) == Counter({"completed": TASKS})
    # None run twice: one model call per message, and no other calls.
    calls = Counter(
        int(m.group(1)) for r in fake_llm.requests if (m := MARKER.search(r.first_user_text))
    )
    twice = {n: c for n, c in calls.items() if c != 1}
    assert not twice, f"messages whose model call was made more than once: {twice}"
    assert len(fake_llm.requests) == TASKS
    assert sorted(calls) == list(range(TASKS))
    assert fake_llm.remaining == 0
    # Nothing else left behind, and nothing went wrong on the way.
    assert not TaskRecord.objects.filter(state__in=("submitted", "working")).exists()
    assert TaskRecord.objects.count() == TASKS
    assert "Traceback" not in output, output[-3000:]
