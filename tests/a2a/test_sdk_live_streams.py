"""The official a2a-sdk client (its v1.0 JSON-RPC transport and its v0.3
compat transport), configured to stream, reads a streamed Task's live
updates as an application would: it iterates the events, applies each
artifact update (``append`` adds, otherwise the artifact starts anew) and so
shows the answer growing — which ends as exactly the final Task's artifact —
and it sees each tool call as a ``working`` status update, before the answer.
Real servers (both of the agent_url fixture's), the fake model in both styles."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import Client
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.compat.v0_3.jsonrpc_transport import CompatJsonRpcTransport
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict

from tests import tools
from tests.fakes import FakeLLM, Text, ToolCall
from tests.live import TWENTY_WORDS

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=["openai", "anthropic"])
def fake(request: pytest.FixtureRequest) -> Iterator[FakeLLM]:
    with FakeLLM(style=request.param) as model:
        yield model


@asynccontextmanager
async def streaming_client(agent_url: str, transport: str) -> AsyncIterator[Client]:
    """A client made as an application makes one, ``streaming=True``: from
    the served card (v1.0), or from the card as a v0.3-only client reads it
    (without ``supportedInterfaces``: the factory picks the compat transport)."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(30)) as http:
        config = ClientConfig(streaming=True, httpx_client=http)
        base = agent_url.rstrip("/")
        if transport == "v1.0":
            card = await A2ACardResolver(http, base).get_agent_card()
        else:
            raw = (await http.get(f"{base}/.well-known/agent-card.json")).json()
            raw.pop("supportedInterfaces")
            card = parse_agent_card(raw)
        client = ClientFactory(config).create(card)
        expected = JsonRpcTransport if transport == "v1.0" else CompatJsonRpcTransport
        assert isinstance(client._transport, expected)  # type: ignore[attr-defined]
        try:
            yield client
        finally:
            await client.close()


class Reader:
    """What an application keeps while it reads the stream: the answer's
    text per artifact (append adds, else it starts anew), the text shown
    after each chunk, each tool call's status, the order of things."""

    def __init__(self) -> None:
        self.task: Task | None = None
        self.texts: dict[str, str] = {}
        self.shown: list[str] = []  # the answer on screen after each chunk
        self.tools: list[dict[str, Any]] = []
        self.tool_words: list[str] = []
        self.order: list[str] = []
        self.states: list[int] = []

    def take(self, event: StreamResponse) -> None:
        if event.HasField("task"):
            self.task = Task()
            self.task.CopyFrom(event.task)
            self.order.append("task")
        elif event.HasField("status_update"):
            status = event.status_update.status
            self.states.append(status.state)
            datas = [MessageToDict(p.data) for p in status.message.parts if p.HasField("data")]
            calls = [d for d in datas if isinstance(d, dict) and "tool" in d]
            if calls:
                self.tools += calls
                self.tool_words += [p.text for p in status.message.parts if p.text]
                self.order.append("tool")
            else:
                self.order.append("status")
        elif event.HasField("artifact_update"):
            update = event.artifact_update
            artifact_id = update.artifact.artifact_id
            text = "".join(p.text for p in update.artifact.parts)
            if update.append:
                self.texts[artifact_id] += text  # a KeyError: an append to nothing
            else:
                self.texts[artifact_id] = text
            assert self.task is not None
            append_artifact_to_task(self.task, update)  # the SDK's own reading of it
            if update.last_chunk:
                self.order.append("artifact")
            else:
                self.shown.append(self.texts[artifact_id])
                self.order.append("chunk")


@pytest.mark.parametrize("transport", ["v1.0", "v0.3"])
def test_the_sdk_client_shows_the_answer_as_it_is_written_and_each_tool_call(
    agent_url: str, configure: Any, fake: FakeLLM, transport: str
) -> None:
    configure(fake, TOOLKIT=tools.toolkit_setting())
    fake.push(ToolCall("lookup", {"code": "ZX-42"}), Text(TWENTY_WORDS, pace=0.03))

    async def scenario() -> tuple[Reader, Task]:
        reader = Reader()
        async with streaming_client(agent_url, transport) as client:
            request = SendMessageRequest(
                message=Message(
                    message_id=str(uuid.uuid4()),
                    role=Role.ROLE_USER,
                    parts=[Part(text="look ZX-42 up")],
                )
            )
            async for event in client.send_message(request):
                reader.take(event)
            assert reader.task is not None
            final = await client.get_task(GetTaskRequest(id=reader.task.id))
        return reader, final

    reader, final = asyncio.run(asyncio.wait_for(scenario(), 30))

    assert final.status.state == TaskState.TASK_STATE_COMPLETED
    [artifact] = final.artifacts
    answer = "".join(p.text for p in artifact.parts)
    assert answer == TWENTY_WORDS
    # The answer grew on screen, chunk by chunk, on the final artifact's id,
    # each step a beginning of the answer, the last one all of it.
    assert len(reader.shown) > 1, reader.order
    assert all(answer.startswith(shown) for shown in reader.shown), reader.shown
    assert reader.shown[-1] == answer
    assert list(reader.texts) == [artifact.artifact_id]
    assert reader.texts[artifact.artifact_id] == answer
    # The SDK's own artifact handling ends with the same single artifact.
    assert reader.task is not None
    assert [(a.artifact_id, "".join(p.text for p in a.parts)) for a in reader.task.artifacts] == [
        (artifact.artifact_id, answer)
    ]
    # The tool call, as working status updates, before the answer's chunks.
    assert [(t["tool"], t["status"]) for t in reader.tools] == [
        ("lookup", "running"),
        ("lookup", "ok"),
    ]
    assert reader.tools[0]["arguments"] == {"code": "ZX-42"}
    assert reader.tool_words == ['Calling lookup {"code": "ZX-42"}', "lookup: done"]
    assert reader.order.index("chunk") > max(i for i, k in enumerate(reader.order) if k == "tool")
    assert reader.order[-2:] == ["artifact", "status"]
    assert reader.states[-1] == TaskState.TASK_STATE_COMPLETED
    assert set(reader.states[:-1]) == {TaskState.TASK_STATE_WORKING}
    # Never the tool's output.
    assert "looked up ZX-42" not in repr(reader.__dict__)
