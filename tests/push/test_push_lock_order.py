"""One lock order for push configs (PostgreSQL): 16 clients creating,
replacing, reading and deleting configs on the same Tasks over real HTTP,
while those Tasks move and their notifications are delivered to a real
receiver, never meet in a deadlock — no -32603, and PostgreSQL counts no
deadlock in the test database."""

from __future__ import annotations

import json
import random
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang, Text
from tests.servers import fake_env, serve
from tests.webhooks import Receiver
from toolnexus_django.models import PushConfig

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CLIENTS = 16
REQUESTS = 100  # per client
TASKS = 4  # shared by every client
CONFIG_IDS = ("a", "b", "c", "d", "e")  # few: creates replace, deletes find them
V1 = {"A2A-Version": "1.0"}


def deadlocks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


def send(rpc: RpcClient, text: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
    configuration: dict[str, Any] = {"returnImmediately": True}
    if config is not None:
        configuration["taskPushNotificationConfig"] = config
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    return rpc.call("SendMessage", {"message": message, "configuration": configuration})


def one_request(rpc: RpcClient, rng: random.Random, tasks: list[str], hook: str) -> dict[str, Any]:
    """A random push-config call on one of the shared Tasks (or, now and
    then, a send with an inline config: a new Task whose events are delivered)."""
    task_id, config_id = rng.choice(tasks), rng.choice(CONFIG_IDS)
    roll = rng.random()
    if roll < 0.40:
        return rpc.call(
            "CreateTaskPushNotificationConfig",
            {"taskId": task_id, "id": config_id, "url": hook, "token": "t"},
        )
    if roll < 0.75:
        return rpc.call("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": config_id})
    if roll < 0.85:
        return rpc.call("ListTaskPushNotificationConfigs", {"taskId": task_id})
    if roll < 0.95:
        return rpc.call("GetTaskPushNotificationConfig", {"taskId": task_id, "id": config_id})
    return send(rpc, "a new one, notified", {"url": hook, "token": "t"})


def test_concurrent_create_and_delete_never_deadlock(fake_llm: FakeLLM, tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("counts PostgreSQL's deadlocks; this run's database is sqlite")
    # The shared Tasks wait on the model, then complete while the clients
    # run: their configs then have events to deliver.
    fake_llm.on("shared", *[Hang(max_seconds=60, then=Text("done"))] * TASKS)
    fake_llm.default = Text("done")
    env = {
        **fake_env(fake_llm),
        "TOOLNEXUS_PUSH_ALLOWED_HOSTS": "127.0.0.1",
        "TOOLNEXUS_PUSH_TIMEOUT": "2",
        "TOOLNEXUS_SWEEP_INTERVAL": "0.5",
    }
    errors: list[dict[str, Any]] = []
    codes: Counter[str] = Counter()
    lock = threading.Lock()
    with Receiver() as hook, serve(tmp_path, "--workers", "2", env=env) as server:
        server.wait_ready()
        rpc = RpcClient(server.base + "/agent/", V1)
        tasks = [send(rpc, f"shared {n}")["result"]["task"]["id"] for n in range(TASKS)]
        fake_llm.wait_held(TASKS)
        before = deadlocks()

        def client(n: int) -> None:
            mine = RpcClient(server.base + "/agent/", V1)
            rng = random.Random(n)
            for i in range(REQUESTS):
                if n == 0 and i == REQUESTS // 4:
                    fake_llm.release()  # the shared Tasks move on, mid-run
                reply = one_request(mine, rng, tasks, hook.url)
                with lock:
                    if "error" in reply:
                        codes[str(reply["error"]["code"])] += 1
                        if reply["error"]["code"] == -32603:
                            errors.append(reply["error"])
                    else:
                        codes["ok"] += 1

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not any(t.is_alive() for t in threads), "a client did not finish in 300 s"
        # Deliveries still in flight finish (their leases released) before counting.
        wait_until(
            lambda: not PushConfig.objects.exclude(lease_owner="").exists(),
            timeout=30,
            what="every delivery to finish",
        )
        log = server.output()
    after = deadlocks()  # the server's backends have exited: their counts are in
    print(
        f"answers: {dict(codes)}; notifications received: {len(hook.received)}; "
        f"deadlocks: {after - before}"
    )
    assert sum(codes.values()) == CLIENTS * REQUESTS
    assert errors == [], json.dumps(errors[:3])[:2000]
    assert "deadlock detected" not in log
    assert after - before == 0
    assert len(hook.received) > 0  # deliveries did run meanwhile
