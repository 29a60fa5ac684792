"""Deleting a push notification config is idempotent (A2A v1.0 §3.1.10): a
second delete of the same config of an existing Task succeeds, as does a
delete of a config that never was — in JSON-RPC v1.0, v0.3 and HTTP+JSON —
while another owner's Task stays "not found", exactly like an unknown one."""

from __future__ import annotations

import uuid
from typing import Any

from tests.a2a.test_rest_binding import BASIC_ONLY, reason, rest
from tests.conftest import RpcClient, basic
from tests.fakes import FakeLLM, Text
from toolnexus_django.models import PushConfig

V1 = {"A2A-Version": "1.0"}
ALLOW = {"ALLOWED_HOSTS": ["127.0.0.1"]}


def new_task(rpc: RpcClient) -> str:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "a job"}]}
    reply = rpc.call("SendMessage", {"message": message}, headers=V1)
    return str(reply["result"]["task"]["id"])


def with_config(rpc: RpcClient, task_id: str, config_id: str) -> None:
    made = rpc.call(
        "CreateTaskPushNotificationConfig",
        {"taskId": task_id, "id": config_id, "url": "http://127.0.0.1:9/hook"},
        headers=V1,
    )
    assert made["result"]["id"] == config_id, made


def test_a_second_delete_succeeds_in_every_dialect(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, PUSH=ALLOW)
    fake_llm.default = Text("done")
    task_id = new_task(rpc)
    with_config(rpc, task_id, "c1")
    for _ in range(2):
        deleted = rpc.call(
            "DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}, headers=V1
        )
        assert deleted == {"jsonrpc": "2.0", "id": deleted["id"], "result": {}}
    assert not PushConfig.objects.filter(task_id=task_id).exists()

    with_config(rpc, task_id, "c2")
    for _ in range(2):
        deleted = rpc.call(
            "tasks/pushNotificationConfig/delete", {"id": task_id, "pushNotificationConfigId": "c2"}
        )
        assert deleted["result"] is None, deleted
    never = rpc.call(
        "DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "never-made"}, headers=V1
    )
    assert never["result"] == {}


def test_a_second_delete_succeeds_on_http_json(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, PUSH=ALLOW)
    fake_llm.default = Text("done")
    rpc = RpcClient(agent_url)
    task_id = new_task(rpc)
    with_config(rpc, task_id, "c1")
    route = f"tasks/{task_id}/pushNotificationConfigs/c1"
    for _ in range(2):
        deleted = rest(agent_url, "DELETE", route)
        assert (deleted.status, deleted.json) == (200, {})
    assert rest(agent_url, "GET", route).status == 404  # gone, as a read says


def test_another_owners_task_stays_not_found(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: Any
) -> None:
    configure(fake_llm, PUSH=ALLOW, **BASIC_ONLY)
    fake_llm.default = Text("done")
    alice = RpcClient(agent_url, basic("alice"))
    task_id = new_task(alice)
    with_config(alice, task_id, "c1")
    for task in (task_id, "no-such-task"):
        as_bob = RpcClient(agent_url, basic("bob")).call(
            "DeleteTaskPushNotificationConfig", {"taskId": task, "id": "c1"}, headers=V1
        )
        assert as_bob["error"]["code"] == -32001, as_bob
        refused = rest(
            agent_url, "DELETE", f"tasks/{task}/pushNotificationConfigs/c1", headers=basic("bob")
        )
        assert (refused.status, reason(refused)) == (404, "TASK_NOT_FOUND")
    assert PushConfig.objects.filter(task_id=task_id, config_id="c1").exists()  # still alice's
