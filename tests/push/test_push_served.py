"""Push notifications from a real ``toolnexus_serve``: undelivered notifications
survive kill -9 of the whole server and are delivered, in order, by the next
one; the official a2a-sdk client's push-config calls work over JSON-RPC,
HTTP+JSON and gRPC."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskPushNotificationConfig,
)

from tests.conftest import RpcClient, wait_until
from tests.e2e.test_crash import kill_whole_server
from tests.fakes import FakeLLM, Hang, Text
from tests.servers import fake_env, free_port, serve
from tests.webhooks import Receiver
from toolnexus_django.models import PushConfig, PushDelivery

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def push_env(fake: FakeLLM, **extra: str) -> dict[str, str]:
    return {
        **fake_env(fake),
        "TOOLNEXUS_PUSH_ALLOWED_HOSTS": "127.0.0.1",
        "TOOLNEXUS_PUSH_TIMEOUT": "2",
        "TOOLNEXUS_SWEEP_INTERVAL": "0.5",
        **extra,
    }


def order_key(event_id: str) -> tuple[int, int]:
    head, _, k = event_id.partition(".")
    return int(head), int(k or 0)


def send_notified(rpc: RpcClient, config: dict[str, Any]) -> str:
    """A v1.0 send with ``config`` inline, run to completion; its Task's id."""
    task_id = rpc.call(
        "SendMessage",
        {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "notify me"}],
            },
            "configuration": {"returnImmediately": True, "taskPushNotificationConfig": config},
        },
    )["result"]["task"]["id"]
    rpc.wait(task_id, states=("TASK_STATE_COMPLETED",))
    return str(task_id)


def delivered_after_restart(tmp_path: Path, env: dict[str, str], hook: Receiver) -> list[Any]:
    """Bring the receiver back, start a new server, and return what it
    delivers up to the completed notification."""
    tried = len(hook.received)
    hook.always(200)  # back up
    with serve(tmp_path, env=env) as second:
        second.wait_ready()
        return list(
            wait_until(
                lambda: (
                    [r for r in hook.received[tried:] if r.state == "TASK_STATE_COMPLETED"]
                    and hook.received[tried:]
                ),
                timeout=30,
                what="the next server to deliver what the dead one could not",
            )
        )


def test_undelivered_notifications_survive_kill_9(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.default = Text("done before the crash")
    env = push_env(fake_llm, TOOLNEXUS_PUSH_RETRY_DELAY="4")
    with Receiver() as hook:
        hook.always(503)  # down: every notification waits
        with serve(tmp_path, env=env) as first:
            rpc = RpcClient(first.wait_ready()["url"], {"A2A-Version": "1.0"})
            task_id = send_notified(rpc, {"url": hook.url, "token": "t"})
            # A failed attempt is recorded, the retry is seconds away and no
            # delivery is in flight: the crash comes between attempts.
            config = wait_until(
                lambda: PushConfig.objects.filter(
                    task_id=task_id, lease_owner="", next_attempt_at__isnull=False
                ).first(),
                what="a failed attempt with its retry set",
            )
            kill_whole_server(first)
        assert config.delivered_seq < config.task.event_seq  # undelivered when it died
        got = delivered_after_restart(tmp_path, env, hook)
    ids = [r.headers["x-a2a-event-id"] for r in got]
    assert ids == sorted(ids, key=order_key) and len(set(ids)) == len(ids)
    assert ids[0] == hook.received[0].headers["x-a2a-event-id"]  # from the first undelivered on
    assert [r.state for r in got if r.state][-1] == "TASK_STATE_COMPLETED"
    assert PushDelivery.objects.filter(config=config, outcome="retry").exists()


def test_the_official_client_manages_push_configs(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.default = Hang(max_seconds=20, then=Text("done"))

    async def scenario(base: str, hook_url: str) -> None:
        for binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
            async with httpx.AsyncClient(timeout=20) as http:
                card = await A2ACardResolver(http, f"{base}/agent").get_agent_card()
                assert card.capabilities.push_notifications is True
                config = ClientConfig(
                    httpx_client=http,
                    streaming=False,
                    supported_protocol_bindings=[binding],
                    grpc_channel_factory=grpc.aio.insecure_channel,
                )
                client = ClientFactory(config).create(card)
                try:
                    request = SendMessageRequest(
                        message=Message(
                            message_id=str(uuid.uuid4()),
                            role=Role.ROLE_USER,
                            parts=[Part(text="x")],
                        ),
                        configuration=SendMessageConfiguration(return_immediately=True),
                    )
                    [event] = [e async for e in client.send_message(request)]
                    task_id = event.task.id
                    made = await client.create_task_push_notification_config(
                        TaskPushNotificationConfig(
                            task_id=task_id, id=f"sdk-{binding}", url=hook_url, token="tok"
                        )
                    )
                    assert (made.id, made.url, made.token) == (f"sdk-{binding}", hook_url, "tok")
                    got = await client.get_task_push_notification_config(
                        GetTaskPushNotificationConfigRequest(task_id=task_id, id=made.id)
                    )
                    assert got.url == hook_url
                    listed = await client.list_task_push_notification_configs(
                        ListTaskPushNotificationConfigsRequest(task_id=task_id)
                    )
                    assert [c.id for c in listed.configs] == [made.id]
                    await client.delete_task_push_notification_config(
                        DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=made.id)
                    )
                    listed = await client.list_task_push_notification_configs(
                        ListTaskPushNotificationConfigsRequest(task_id=task_id)
                    )
                    assert list(listed.configs) == []
                finally:
                    await client.close()

    env = push_env(fake_llm, TOOLNEXUS_GRPC_ADDRESS=f"127.0.0.1:{free_port()}")
    with Receiver() as hook, serve(tmp_path, env=env) as server:
        server.wait_ready()
        asyncio.run(scenario(server.base, hook.url))
        fake_llm.release()


def test_the_file_store_keeps_undelivered_notifications_through_kill_9(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    from toolnexus_django.push.local import LocalBook
    from toolnexus_django.stores import FileTaskStore

    tasks = tmp_path / "tasks"
    fake_llm.default = Text("done before the crash")
    env = push_env(fake_llm, TOOLNEXUS_PUSH_RETRY_DELAY="4", TOOLNEXUS_STORE=f"file:{tasks}")
    with Receiver() as hook:
        hook.always(503)
        with serve(tmp_path, env=env) as first:
            rpc = RpcClient(first.wait_ready()["url"], {"A2A-Version": "1.0"})
            task_id = send_notified(rpc, {"id": "c", "url": hook.url, "token": "t"})
            book = LocalBook(FileTaskStore(tasks))
            wait_until(
                lambda: (
                    (c := book.docs.read(task_id)["configs"].get("c"))
                    and c["lease_owner"] == ""
                    and c["next_attempt_at"]
                ),
                what="a failed attempt with its retry set, in the Task's push file",
            )
            kill_whole_server(first)
        got = delivered_after_restart(tmp_path, env, hook)
    ids = [r.headers["x-a2a-event-id"] for r in got]
    assert (
        ids == sorted(ids, key=order_key) and ids[0] == hook.received[0].headers["x-a2a-event-id"]
    )
    assert [r.state for r in got if r.state][-1] == "TASK_STATE_COMPLETED"
