"""The gRPC binding of a real ``toolnexus_serve`` (``TOOLNEXUS["GRPC"]`` on),
driven by the official a2a-sdk client's gRPC transport and by the SDK's own
generated stub: a Task waiting on a person is answered in the server's admin
and completes; the endpoint's DRF classes decide who calls (refusals are
UNAUTHENTICATED / PERMISSION_DENIED); another owner's Task is NOT_FOUND; and
SIGTERM ends open gRPC streams and stops the server cleanly.

(The scenarios every transport runs — send, stream, get, list, cancel,
subscribe — are in test_a2a_sdk.py, over gRPC too; the push-config round trip
in tests/push/test_push_served.py.)"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.client import Client, ClientCallContext
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError
from django.contrib.auth.models import Permission

from tests.admin_http import AdminSession
from tests.conftest import basic, wait_until
from tests.fakes import FakeLLM, Hang, Text, ToolCall
from tests.servers import Served, fake_env, free_port, serve
from tests.utils import pending_id
from toolnexus_django.a2a.card import EXTENDED_CARD_EXTENSION

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

EXPENSE = ToolCall("file_expense", {"amount": 12.5, "description": "taxi"})
REVIEW = "/admin/toolnexus_django/awaitinghumantask/{}/review/"
#: Who may call: staff users only (DRF's IsAdminUser), known by HTTP Basic.
STAFF_ONLY = {
    "DEMO_AGENT": "expenses",  # BasicAuthentication (and sessions)
    "TOOLNEXUS_PERMISSION_CLASSES": "rest_framework.permissions.IsAdminUser",
}


def grpc_server(tmp_path: Path, fake: FakeLLM, *args: str, **env: str) -> Any:
    """toolnexus_serve with gRPC on, on a port of its own."""
    address = f"127.0.0.1:{free_port()}"
    return serve(tmp_path, *args, env={**fake_env(fake), "TOOLNEXUS_GRPC_ADDRESS": address, **env})


def request(text: str, **fields: Any) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)], **fields
        ),
        configuration=SendMessageConfiguration(return_immediately=True),
    )


@asynccontextmanager
async def grpc_client(base: str) -> AsyncIterator[Client]:
    """The SDK's client, made from the served card, speaking gRPC only."""
    async with httpx.AsyncClient(timeout=20) as http:
        card = await A2ACardResolver(http, f"{base}/agent").get_agent_card()
        config = ClientConfig(
            streaming=False,
            supported_protocol_bindings=["GRPC"],
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        client = ClientFactory(config).create(card)
        try:
            yield client
        finally:
            await client.close()


def credentials(name: str, password: str | None = None) -> tuple[tuple[str, str], ...]:
    """HTTP Basic as gRPC metadata (lower-case keys, as gRPC requires)."""
    return (("authorization", basic(name, password)["Authorization"]),)


def as_user(name: str) -> ClientCallContext:
    return ClientCallContext(service_parameters=basic(name))


async def send(client: Client, req: SendMessageRequest, **kw: Any) -> Task:
    [event] = [e async for e in client.send_message(req, **kw)]
    return event.task


async def wait_for(client: Client, task_id: str, state: int, **kw: Any) -> Task:
    deadline = time.monotonic() + 20
    while True:
        task = await client.get_task(GetTaskRequest(id=task_id), **kw)
        if task.status.state == state:
            return task
        assert time.monotonic() < deadline, f"{task_id} stuck in {task.status.state}"
        await asyncio.sleep(0.05)


def grpc_address(server: Served) -> str:
    card = server.wait_ready()
    [entry] = [i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    return str(entry["url"])


def test_a_task_answered_in_the_admin_completes_over_grpc(
    fake_llm: FakeLLM, tmp_path: Path, django_user_model: Any
) -> None:
    rita = django_user_model.objects.create_user("rita", password="rita-pw", is_staff=True)
    rita.user_permissions.add(Permission.objects.get(codename="answer_task"))
    fake_llm.push(EXPENSE, Text("Your claim is filed."))

    async def asked(base: str) -> Task:
        async with grpc_client(base) as client:
            task = await send(client, request("file an expense of 12.5 for a taxi"))
            return await wait_for(client, task.id, TaskState.TASK_STATE_INPUT_REQUIRED)

    async def finished(base: str, task_id: str) -> Task:
        async with grpc_client(base) as client:
            return await wait_for(client, task_id, TaskState.TASK_STATE_COMPLETED)

    with grpc_server(tmp_path, fake_llm, "--workers", "2") as server:
        server.wait_ready()
        # Both workers serve the one address (SO_REUSEPORT); the Task may run in either.
        wait_until(
            lambda: server.output().count("gRPC: serving A2A on") == 2,
            what="both workers serving gRPC",
        )
        waiting = asyncio.run(asked(server.base))
        assert "Approve an expense claim" in waiting.status.message.parts[0].text

        admin = AdminSession(server.base).login("rita", "rita-pw")
        review = REVIEW.format(waiting.id)
        assert admin.get(review).status == 200
        fields = {"request_id": pending_id(waiting.id), "_answer": "reply"}
        fields.update({"reply-cost_center": "travel", "reply-approved_amount": "12.5"})
        assert admin.post(review, fields).status == 200

        done = asyncio.run(finished(server.base, waiting.id))
        assert done.artifacts[0].parts[0].text == "Your claim is filed."
        # This agent authenticates nobody, so its card declares no extended card:
        # the operation is unsupported (v1.0 §3.3.4, §5.4: FAILED_PRECONDITION).
        assert asyncio.run(extended_card_refusal(grpc_address(server))) == (
            grpc.StatusCode.FAILED_PRECONDITION
        )


async def extended_card_refusal(address: str) -> grpc.StatusCode:
    async with grpc.aio.insecure_channel(address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await a2a_pb2_grpc.A2AServiceStub(channel).GetExtendedAgentCard(
                GetExtendedAgentCardRequest()
            )
    return caught.value.code()


def test_an_anonymous_caller_must_authenticate_for_the_extended_card(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    # Basic authentication offered, anonymous callers allowed (the demo's own setup):
    # the card declares an extended card, which is for authenticated callers (v1.0 §13.3).
    with grpc_server(tmp_path, fake_llm, DEMO_AGENT="expenses") as server:
        server.wait_ready()
        address = grpc_address(server)
        assert asyncio.run(extended_card_refusal(address)) == grpc.StatusCode.UNAUTHENTICATED


async def refused(
    address: str, metadata: tuple[tuple[str, str], ...], request: Any = None
) -> grpc.StatusCode:
    """The status a GetTask (or a SendMessage of ``request``) gets with
    ``metadata``, called with the SDK's own stub."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            if request is None:
                await stub.GetTask(GetTaskRequest(id="any"), metadata=metadata)
            else:
                await stub.SendMessage(request, metadata=metadata)
    return caught.value.code()


def test_the_endpoints_drf_classes_decide_who_calls_and_whose_tasks_they_see(
    fake_llm: FakeLLM, tmp_path: Path, django_user_model: Any
) -> None:
    for name in ("ann", "ben"):
        django_user_model.objects.create_user(name, password=f"{name}-pw", is_staff=True)
    django_user_model.objects.create_user("carl", password="carl-pw")  # not staff
    fake_llm.default = Hang(max_seconds=20, then=Text("done"))

    async def scenario(base: str, address: str) -> None:
        # Refusals, before anything is dispatched.
        assert await refused(address, ()) == grpc.StatusCode.UNAUTHENTICATED
        wrong = credentials("ann", "wrong")
        assert await refused(address, wrong) == grpc.StatusCode.UNAUTHENTICATED
        assert await refused(address, credentials("carl")) == grpc.StatusCode.PERMISSION_DENIED
        # The binding is A2A 1.0's: a client that says it speaks 0.3 is told so.
        old = (*credentials("ann"), ("a2a-version", "0.3"))
        assert await refused(address, old) == grpc.StatusCode.FAILED_PRECONDITION
        # Bad input is INVALID_ARGUMENT, and nothing is created (ann lists one Task below).
        no_parts = SendMessageRequest(message=Message(message_id="m-1", role=Role.ROLE_USER))
        bad = await refused(address, credentials("ann"), no_parts)
        assert bad == grpc.StatusCode.INVALID_ARGUMENT

        async with grpc_client(base) as client:
            task = await send(client, request("ann's job"), context=as_user("ann"))
            mine = await client.get_task(GetTaskRequest(id=task.id), context=as_user("ann"))
            assert mine.id == task.id and mine.history[0].parts[0].text == "ann's job"
            # Ben is told nothing about it, whatever he asks.
            ben = as_user("ben")
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id=task.id), context=ben)
            with pytest.raises(TaskNotFoundError):
                await client.cancel_task(CancelTaskRequest(id=task.id), context=ben)
            async with grpc.aio.insecure_channel(address) as channel:
                stream = a2a_pb2_grpc.A2AServiceStub(channel).SubscribeToTask(
                    SubscribeToTaskRequest(id=task.id), metadata=credentials("ben")
                )
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stream.read()
                assert caught.value.code() == grpc.StatusCode.NOT_FOUND
            with pytest.raises(TaskNotFoundError):
                config = TaskPushNotificationConfig(task_id=task.id, url="https://example.com/h")
                await client.create_task_push_notification_config(config, context=ben)
            with pytest.raises(TaskNotFoundError):
                answer = request("an answer", task_id=task.id, context_id=task.context_id)
                await send(client, answer, context=ben)
            assert list((await client.list_tasks(ListTasksRequest(), context=ben)).tasks) == []
            listed = await client.list_tasks(ListTasksRequest(), context=as_user("ann"))
            assert [t.id for t in listed.tasks] == [task.id]
            ann = as_user("ann")
            card = await client.get_extended_agent_card(GetExtendedAgentCardRequest(), context=ann)
            [extension] = card.capabilities.extensions
            assert extension.uri == EXTENDED_CARD_EXTENSION and "ann" in extension.description
            canceled = await client.cancel_task(CancelTaskRequest(id=task.id), context=ann)
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED

    with grpc_server(tmp_path, fake_llm, **STAFF_ONLY) as server:
        address = grpc_address(server)
        asyncio.run(scenario(server.base, address))
        fake_llm.release()


def grpc_loaded(pid: int) -> bool:
    """Whether grpcio's core is mapped into process ``pid``."""
    return "cygrpc" in Path(f"/proc/{pid}/maps").read_text()


def test_sigterm_ends_an_open_grpc_stream_and_the_server_exits_0(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.default = Hang(max_seconds=30, then=Text("never seen"))

    async def scenario(server: Served, address: str) -> None:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            sent = await stub.SendMessage(request("a long job"))
            fake_llm.wait_held(1)
            stream = stub.SubscribeToTask(SubscribeToTaskRequest(id=sent.task.id))
            first = await stream.read()
            assert first.task.id == sent.task.id
            # A blocking send in flight too (its model call hangs).
            blocking = SendMessageRequest(message=request("another long job").message)
            in_flight = asyncio.ensure_future(stub.SendMessage(blocking))
            await asyncio.to_thread(fake_llm.wait_held, 2)
            server.signal(signal.SIGTERM)
            # The stream ends (its client resubscribes to another server), not hangs...
            while await stream.read() != grpc.aio.EOF:
                pass
            assert await stream.code() == grpc.StatusCode.OK
            # ... and the blocking send is answered with its Task as it stands.
            answered = await in_flight
            assert answered.task.status.state == TaskState.TASK_STATE_WORKING

    with grpc_server(tmp_path, fake_llm, "--workers", "1", "--grace", "3") as server:
        address = grpc_address(server)
        # grpc and fork do not mix: the master never loads it, its worker does.
        master = server.proc.pid
        [worker] = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        assert grpc_loaded(int(worker)) and not grpc_loaded(master)
        asyncio.run(asyncio.wait_for(scenario(server, address), timeout=20))
        assert server.wait(timeout=20) == 0
        fake_llm.release()
    assert "Shutting down: Master" in server.output()
