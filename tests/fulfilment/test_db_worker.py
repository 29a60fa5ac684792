"""Real workers: the web process only accepts and reads Tasks; separate worker
processes run them -- on each Django Tasks engine the project is tested with
(tests/workers.py): ``manage.py db_worker`` (django-tasks-db) and ``manage.py
rqworker`` (django-tasks-rq on Redis). RQ's own behaviour with a killed
worker, and approvals through it: test_rq_worker.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang, Text
from tests.servers import fake_env
from tests.utils import assert_event_log, private_of
from tests.workers import (
    ENGINES,
    Workers,
    rq_fails_it_once_its_heartbeat_lapses,
    rq_jobs,
    runner_of,
    sweeping,
    task_workers,
)
from toolnexus_django.models import TaskRecord
from toolnexus_django.stores import DjangoTaskStore

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

#: The crash test's lease (the workers' and this sweeping process's): a dead
#: worker's Task is taken again within a few seconds.
LEASE_SECONDS = 2.0
TERMINAL = ("completed", "failed", "canceled", "rejected")


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def workers(engine: str, fake_llm: FakeLLM, tmp_path: Path, settings: Any) -> Iterator[Workers]:
    """Two workers of the engine on the test database."""
    env = {
        "LLM_BASE_URL": fake_llm.url,
        "LLM_RETRIES": "0",
        "TOOLNEXUS_LOG_LEVEL": "INFO",
        "TOOLNEXUS_PUSH_ALLOWED_HOSTS": "127.0.0.1",
    }
    with task_workers(engine, tmp_path, env, settings) as started:
        for _ in range(2):
            started.start()
        yield started
        for worker in started.started:
            worker.proc.terminate()  # each ends the job in hand, then exits
        for worker in started.started:
            worker.proc.wait(15)
            # Shown only if the test failed (pytest captures teardown output).
            print(f"--- {engine} worker {worker.pid} ({worker.log}) ---\n{worker.output()[-3000:]}")


def test_workers_run_what_the_web_process_accepts(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, workers: Workers, engine: str
) -> None:
    configure(fake_llm, store="django", TASK_BACKEND=engine)
    count = 12
    for i in range(count):
        fake_llm.on(f"job {i}.", Text(f"result {i}"))
    ids = [rpc.send(f"job {i}.")["id"] for i in range(count)]
    for i, task_id in enumerate(ids):
        done = rpc.wait(task_id, timeout=60)
        assert done["status"]["state"] == "completed"
        assert done["artifacts"][0]["parts"][0]["text"] == f"result {i}"
    # Each Task ran exactly once...
    for i in range(count):
        assert len(fake_llm.requests_for(f"job {i}.")) == 1
    # ...and never in this (web) process: every run's lease named a process
    # of a worker (a db_worker itself; a work horse an rqworker forked).
    assert all(w.proc.poll() is None for w in workers.started), "a worker died"
    runners = {
        int(row.private["worker"].rsplit(":", 1)[1])
        for row in TaskRecord.objects.filter(pk__in=ids)
    }
    assert runners <= workers.runners(), (runners, workers.runners())
    assert os.getpid() not in runners


def test_workers_deliver_push_notifications(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, workers: Workers, engine: str
) -> None:
    from tests.webhooks import Receiver
    from toolnexus_django.push import delivery

    configure(fake_llm, store="django", TASK_BACKEND=engine, PUSH={"ALLOWED_HOSTS": ["127.0.0.1"]})
    fake_llm.default = Text("delivered by a worker")
    delivery._pool.pop()  # any delivery in this process would make it anew
    v1 = RpcClient(rpc.endpoint, {"A2A-Version": "1.0"})
    with Receiver() as hook:
        task_id = v1.call(
            "SendMessage",
            {
                "message": {"messageId": "m-push", "role": "ROLE_USER", "parts": [{"text": "x"}]},
                "configuration": {
                    "returnImmediately": True,
                    "taskPushNotificationConfig": {"url": hook.url, "token": "w"},
                },
            },
        )["result"]["task"]["id"]
        got = wait_until(
            lambda: (
                [r for r in hook.received if r.state == "TASK_STATE_COMPLETED"]
                and list(hook.received)
            ),
            timeout=60,
            what="the workers to deliver the Task's notifications",
        )
    assert all(r.headers["x-a2a-notification-token"] == "w" for r in got)
    assert all(
        r.body["statusUpdate" if "statusUpdate" in r.body else "artifactUpdate"]["taskId"]
        == task_id
        for r in got
    )
    # The deliveries were Django Tasks on the workers' backend: this (web)
    # process never started its own delivering threads.
    assert delivery._pool.peek() is None


# -- kill -9 of a worker mid-run, then a new worker ------------------------------------------


def test_kill_9_of_a_worker_mid_run_then_a_new_worker_completes_the_task_once(
    live_server: Any,
    configure: Any,
    fake_llm: FakeLLM,
    tmp_path: Path,
    settings: Any,
    engine: str,
) -> None:
    configure(fake_llm, store="django", TASK_BACKEND=engine, LEASE_SECONDS=LEASE_SECONDS)
    marker = f"killed on {engine}"
    fake_llm.on(marker, Hang(max_seconds=30), Text(f"{marker}: finished after the crash"))
    env = {**fake_env(fake_llm), "TOOLNEXUS_LEASE_SECONDS": f"{LEASE_SECONDS:g}"}
    rpc = RpcClient(f"{live_server.url}/agent/")
    with task_workers(engine, tmp_path, env, settings) as workers:
        first = workers.start()
        task_id = rpc.send(f"{marker}: file my receipt")["id"]
        fake_llm.wait_held(1, timeout=30)  # the run waits on its model call
        runner = runner_of(task_id)
        assert runner in first.runners()

        killed = first.kill()
        assert runner in killed  # the process that held the Task (rq: the horse) died
        dead_jobs = rq_jobs(task_id) if engine == "rq" else []
        left = DjangoTaskStore().get(task_id)
        assert left is not None and left["status"]["state"] == "working"
        assert private_of(left).attempts == 1

        second = workers.start()
        with sweeping():
            done = rpc.wait(task_id, TERMINAL, timeout=45)
        assert done["status"]["state"] == "completed", done["status"]
        assert done["artifacts"][0]["parts"][0]["text"] == f"{marker}: finished after the crash"
        assert second.proc.poll() is None, "the new worker died"
        # RQ's own handling of the dead worker's job: failed, not run again.
        for job in dead_jobs:
            rq_fails_it_once_its_heartbeat_lapses(job)
        if engine == "rq":
            assert [j.get_status() for j in rq_jobs(task_id)] == ["failed", "finished"]

    # Run again once, by the new worker, after the dead one's lease lapsed:
    # one model call per attempt, and one completion in the event log.
    assert runner_of(task_id) in second.runners() - killed
    assert private_of(task_id).attempts == 2
    assert private_of(task_id).lease is None
    assert len(fake_llm.requests_for(marker)) == 2
    kinds = [e["kind"] for e in assert_event_log(task_id, DjangoTaskStore())]
    assert kinds == ["submit", "claim", "requeue", "claim", "complete"]
