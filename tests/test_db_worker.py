"""Real workers: the web process only accepts and reads Tasks; separate
``manage.py db_worker`` processes (django-tasks-db's DatabaseBackend) run them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text
from tests.servers import database_url
from toolnexus_django.models import TaskRecord

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def workers(fake_llm: FakeLLM, tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    """Two db_worker processes on the test database."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "TOOLNEXUS_STORE": "django",
        "TOOLNEXUS_TASK_BACKEND": "database",
        "LLM_BASE_URL": fake_llm.url,
        "LLM_RETRIES": "0",
        "TOOLNEXUS_LOG_LEVEL": "INFO",
        "TOOLNEXUS_PUSH_ALLOWED_HOSTS": "127.0.0.1",
    }
    procs = []
    for n in range(2):
        log = open(tmp_path / f"worker{n}.log", "w")
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "db_worker",
                    "--backend",
                    "database",
                    "--interval",
                    "0.1",
                    "--no-startup-delay",
                    "--no-reload",
                    "--worker-id",
                    f"test-worker-{n}",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    try:
        yield procs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def test_db_workers_run_what_the_web_process_accepts(
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    workers: list[subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    configure(fake_llm, store="django", TASK_BACKEND="database")
    count = 12
    for i in range(count):
        fake_llm.on(f"job {i}.", Text(f"result {i}"))
    ids = [rpc.send(f"job {i}.")["id"] for i in range(count)]
    try:
        for i, task_id in enumerate(ids):
            done = rpc.wait(task_id, timeout=60)
            assert done["status"]["state"] == "completed"
            assert done["artifacts"][0]["parts"][0]["text"] == f"result {i}"
    except AssertionError:
        for log in sorted(tmp_path.glob("worker*.log")):
            print(log.name, log.read_text()[-3000:])
        raise
    # Each Task ran exactly once...
    for i in range(count):
        assert len(fake_llm.requests_for(f"job {i}.")) == 1
    # ...and never in this (web) process: every run's lease named a worker process.
    assert all(proc.poll() is None for proc in workers), "a worker died"
    runners = {
        int(row.private["worker"].rsplit(":", 1)[1])
        for row in TaskRecord.objects.filter(pk__in=ids)
    }
    assert runners <= {proc.pid for proc in workers}, runners
    assert os.getpid() not in runners


def test_db_workers_deliver_push_notifications(
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    workers: list[subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    from tests.conftest import wait_until
    from tests.webhooks import Receiver
    from toolnexus_django.push import delivery

    configure(
        fake_llm, store="django", TASK_BACKEND="database", PUSH={"ALLOWED_HOSTS": ["127.0.0.1"]}
    )
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
        try:
            got = wait_until(
                lambda: (
                    [r for r in hook.received if r.state == "TASK_STATE_COMPLETED"]
                    and list(hook.received)
                ),
                timeout=60,
                what="the workers to deliver the Task's notifications",
            )
        except AssertionError:
            for log in sorted(tmp_path.glob("worker*.log")):
                print(log.name, log.read_text()[-3000:])
            raise
    assert all(r.headers["x-a2a-notification-token"] == "w" for r in got)
    assert all(
        r.body["statusUpdate" if "statusUpdate" in r.body else "artifactUpdate"]["taskId"]
        == task_id
        for r in got
    )
    # The deliveries were Django Tasks on the workers' backend: this (web)
    # process never started its own delivering threads.
    assert delivery._pool.peek() is None
