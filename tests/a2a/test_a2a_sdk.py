"""The official a2a-sdk Python client (pinned in the ``test`` extra) against
``manage.py toolnexus_serve`` in a subprocess: its v1.0 JSON-RPC transport, its
v0.3 compat transport, its HTTP+JSON (REST) transport and its gRPC transport
(``TOOLNEXUS["GRPC"]`` on), on the same server and the same Tasks."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import Client
from a2a.client.transports.grpc import GrpcTransport
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.compat.v0_3.jsonrpc_transport import CompatJsonRpcTransport
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from tests.fakes import FakeLLM, Hang, Text, ToolCall
from tests.servers import fake_env, free_port, serve
from tests.sse import split

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

EXPENSE = ToolCall("file_expense", {"amount": 12.5, "description": "taxi"})
ASK = ToolCall("ask_requester", {"question": "Where to, and on which dates?"})
TRANSPORTS = ("v1.0", "v0.3", "rest", "grpc")
SETTLED = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_INPUT_REQUIRED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
}


def message(text: str, **fields: Any) -> Message:
    return Message(
        message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)], **fields
    )


def request(text: str, *, wait: bool = False, **fields: Any) -> SendMessageRequest:
    return SendMessageRequest(
        message=message(text, **fields),
        configuration=SendMessageConfiguration(return_immediately=not wait),
    )


@asynccontextmanager
async def sdk_client(
    base: str, transport: str, *, streaming: bool = False
) -> AsyncIterator[Client]:
    """A client made the way an application makes one: resolve the card at
    ``<base>/agent``, let the factory pick the transport.

    v1.0: the card as served (the factory prefers its 1.0 interface).
    rest: the card as served, by a client that speaks only HTTP+JSON.
    grpc: the card as served, by a client that speaks only gRPC (it dials
    the card's GRPC interface).
    v0.3: the card as a v0.3-only client sees it — its legacy url /
    protocolVersion / preferredTransport fields, without supportedInterfaces —
    which makes the factory choose the compat transport.
    """
    async with httpx.AsyncClient(timeout=httpx.Timeout(30)) as http:
        config = ClientConfig(streaming=streaming, httpx_client=http)
        if transport == "rest":
            config.supported_protocol_bindings = ["HTTP+JSON"]
        if transport == "grpc":
            config.supported_protocol_bindings = ["GRPC"]
            config.grpc_channel_factory = grpc.aio.insecure_channel
        if transport in ("v1.0", "rest", "grpc"):
            card = await A2ACardResolver(http, f"{base}/agent").get_agent_card()
        else:
            raw = (await http.get(f"{base}/agent/.well-known/agent-card.json")).json()
            raw.pop("supportedInterfaces")
            card = parse_agent_card(raw)
        client = ClientFactory(config).create(card)
        expected = {
            "v1.0": JsonRpcTransport,
            "v0.3": CompatJsonRpcTransport,
            "rest": RestTransport,
            "grpc": GrpcTransport,
        }[transport]
        assert isinstance(client._transport, expected)  # type: ignore[attr-defined]
        try:
            yield client
        finally:
            await client.close()


async def send(client: Client, req: SendMessageRequest) -> Task:
    [event] = [e async for e in client.send_message(req)]
    assert event.HasField("task"), event
    return event.task


async def poll(client: Client, task_id: str, states: set[int] = SETTLED) -> Task:
    deadline = time.monotonic() + 20
    while True:
        task = await client.get_task(GetTaskRequest(id=task_id))
        if task.status.state in states:
            return task
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} stuck in {TaskState.Name(task.status.state)}")
        await asyncio.sleep(0.05)


def text_of(task: Task) -> str:
    return "".join(p.text for a in task.artifacts for p in a.parts)


def grpc_env() -> dict[str, str]:
    """toolnexus_serve's environment with gRPC on, on a port of its own."""
    return {"TOOLNEXUS_GRPC_ADDRESS": f"127.0.0.1:{free_port()}"}


@dataclass
class Agent:
    """The module's server and its model: the scenarios share one."""

    base: str
    fake: FakeLLM

    def run(self, scenario: Callable[[str], Awaitable[None]]) -> None:
        asyncio.run(scenario(self.base))


@pytest.fixture(scope="module")
def served_agent(django_db_setup: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    """One ``toolnexus_serve`` (gRPC on) and its fake model for the module:
    no scenario changes or stops the server, and the test database is
    emptied between them, so each sees only its own Tasks (the paging
    scenario counts them; tests/serving/test_shared_server.py)."""
    with (
        FakeLLM(style="openai") as fake,
        serve(
            tmp_path_factory.mktemp("sdk-server"), env={**fake_env(fake), **grpc_env()}
        ) as server,
    ):
        card = server.wait_ready()
        assert card["capabilities"]["streaming"] is True
        yield Agent(server.base, fake)


@pytest.fixture
def agent(served_agent: Agent) -> Agent:
    served_agent.fake.reset()  # the scripts the scenario before left
    return served_agent


# -- the scenarios ---------------------------------------------------------------------


def test_send_then_poll_to_completed(agent: Agent) -> None:
    fake_llm = agent.fake

    async def scenario(base: str) -> None:
        for transport in TRANSPORTS:
            fake_llm.on(f"summarise via {transport}", Text(f"summary over {transport}"))
            async with sdk_client(base, transport) as client:
                task = await send(client, request(f"summarise via {transport}"))
                assert task.status.state == TaskState.TASK_STATE_SUBMITTED
                assert task.context_id and task.history[0].role == Role.ROLE_USER
                done = await poll(client, task.id)
                assert done.status.state == TaskState.TASK_STATE_COMPLETED
                assert text_of(done) == f"summary over {transport}"
                assert [m.role for m in done.history] == [Role.ROLE_USER, Role.ROLE_AGENT]
                assert done.status.timestamp.seconds > 0
                with pytest.raises(TaskNotFoundError):
                    await client.get_task(GetTaskRequest(id="no-such-task"))

    agent.run(scenario)


def test_blocking_send_returns_the_finished_task(agent: Agent) -> None:
    fake_llm = agent.fake

    async def scenario(base: str) -> None:
        for transport in TRANSPORTS:
            fake_llm.on(f"wait via {transport}", Text("finished before the answer"))
            async with sdk_client(base, transport) as client:
                # The SDK's default: return_immediately=False (v0.3: blocking).
                task = await send(
                    client, SendMessageRequest(message=message(f"wait via {transport}"))
                )
                assert task.status.state == TaskState.TASK_STATE_COMPLETED
                assert text_of(task) == "finished before the answer"

    agent.run(scenario)


def test_input_required_then_continue_with_the_task_id(agent: Agent) -> None:
    fake_llm = agent.fake

    async def scenario(base: str) -> None:
        for transport in TRANSPORTS:
            fake_llm.push(EXPENSE, ASK, Text(f"trip booked via {transport}"))
            async with sdk_client(base, transport) as client:
                # The expense approval is a reviewer's to give, never the requester's.
                task = await send(client, request("file an expense of 12.5 for a taxi"))
                waiting = await poll(client, task.id)
                assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
                assert "Approve an expense claim" in waiting.status.message.parts[0].text
                answer = request("approved", task_id=waiting.id, context_id=waiting.context_id)
                with pytest.raises(UnsupportedOperationError, match="reviewer must answer"):
                    await send(client, answer)
                still = await client.get_task(GetTaskRequest(id=waiting.id))
                assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
                await client.cancel_task(CancelTaskRequest(id=waiting.id))

                # ask_requester's question is the requester's to answer.
                task = await send(client, request("book a trip"))
                waiting = await poll(client, task.id)
                assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
                assert waiting.status.message.parts[0].text == "Where to, and on which dates?"
                answer = request(
                    "Lisbon, 3-5 May", task_id=waiting.id, context_id=waiting.context_id
                )
                continued = await send(client, answer)
                assert continued.id == waiting.id
                done = await poll(client, waiting.id)
                assert done.status.state == TaskState.TASK_STATE_COMPLETED
                assert text_of(done) == f"trip booked via {transport}"

    agent.run(scenario)


def test_cancel(agent: Agent) -> None:
    fake_llm = agent.fake

    async def scenario(base: str) -> None:
        for transport in TRANSPORTS:
            fake_llm.push(EXPENSE, Hang(max_seconds=20, then=Text("never seen")))
            async with sdk_client(base, transport) as client:
                # Canceled while it waits for a person...
                task = await send(client, request("file an expense of 12.5 for a taxi"))
                await poll(client, task.id, {TaskState.TASK_STATE_INPUT_REQUIRED})
                canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
                assert canceled.status.state == TaskState.TASK_STATE_CANCELED
                with pytest.raises(TaskNotCancelableError):
                    await client.cancel_task(CancelTaskRequest(id=task.id))
                # ... and while its run is going.
                running = await send(client, request("a long job"))
                fake_llm.wait_held(1)
                canceled = await client.cancel_task(CancelTaskRequest(id=running.id))
                assert canceled.status.state == TaskState.TASK_STATE_CANCELED
                fake_llm.release()
                after = await client.get_task(GetTaskRequest(id=running.id))
                assert after.status.state == TaskState.TASK_STATE_CANCELED
                with pytest.raises(TaskNotFoundError):
                    await client.cancel_task(CancelTaskRequest(id="no-such-task"))

    agent.run(scenario)


@pytest.mark.parametrize("transport", ["v1.0", "rest", "grpc"])
def test_list_tasks_paging_v1(agent: Agent, transport: str) -> None:
    fake_llm = agent.fake

    async def scenario(base: str) -> None:
        fake_llm.default = Text("listed")
        async with sdk_client(base, transport) as client:
            ids = []
            for i in range(5):
                task = await send(client, request(f"job {i}"))
                await poll(client, task.id)
                ids.append(task.id)
            page = await client.list_tasks(ListTasksRequest(page_size=2))
            assert page.total_size == 5 and page.page_size == 2
            seen = [t.id for t in page.tasks]
            # A Task added between pages does not disturb the paging.
            extra = await send(client, request("one more", wait=True))
            token = page.next_page_token
            while token:
                page = await client.list_tasks(ListTasksRequest(page_size=2, page_token=token))
                seen += [t.id for t in page.tasks]
                token = page.next_page_token
            assert seen == list(reversed(ids))
            everything = await client.list_tasks(
                ListTasksRequest(include_artifacts=True, history_length=1)
            )
            assert everything.tasks[0].id == extra.id
            assert text_of(everything.tasks[0]) == "listed"
            assert len(everything.tasks[0].history) == 1
            completed = await client.list_tasks(
                ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED, page_size=100)
            )
            assert len(completed.tasks) == 6

    agent.run(scenario)


def test_streaming_to_the_final_event(agent: Agent) -> None:
    fake_llm = agent.fake

    async def scenario(base: str) -> None:
        for transport in TRANSPORTS:
            fake_llm.on(f"stream via {transport}", Text(f"streamed over {transport}"))
            async with sdk_client(base, transport, streaming=True) as client:
                events: list[StreamResponse] = [
                    e async for e in client.send_message(request(f"stream via {transport}"))
                ]
                # Between the moves, the run's live updates (the answer as it is written).
                streamed = split(events)
                streamed.assert_answer_streamed(required=True)
                assert events[0].HasField("task")
                assert events[0].task.status.state == TaskState.TASK_STATE_SUBMITTED
                artifacts = [e for e in streamed.moves if e.HasField("artifact_update")]
                assert [p.text for p in artifacts[0].artifact_update.artifact.parts] == [
                    f"streamed over {transport}"
                ]
                assert events[-1].HasField("status_update")
                assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED

                # Resubscribing to a running Task streams the rest of it.
                fake_llm.on(f"resubscribe via {transport}", Hang(then=Text("the rest")))
                async with sdk_client(base, transport) as plain:
                    running = await send(plain, request(f"resubscribe via {transport}"))
                fake_llm.wait_held(1)
                stream = client.subscribe(SubscribeToTaskRequest(id=running.id))
                first = await anext(stream)
                assert first.HasField("task") and first.task.id == running.id
                fake_llm.release()
                rest = [e async for e in stream]
                assert rest[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED

    agent.run(scenario)
