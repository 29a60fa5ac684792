"""A streamed Task's live updates over real HTTP (and gRPC): the answer as the
model writes it (artifact-update chunks on the final artifact's id, which a
client assembles to exactly the final text), each tool call as a ``working``
status update (never its output), in every streaming binding, for both model
styles; resuming after a dropped connection by ``Last-Event-ID``; a resumed
Task's continuation; and what does not stream: a model answering JSON, a
client that cannot stream, blocking and polling clients, the feature off.

The model is the fake (tests/fakes/llm.py) streaming word-sized pieces at a
pace; every stream read is bounded (tests/sse.py); nothing of the app is mocked."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest
from google.protobuf.json_format import MessageToDict

from tests import tools
from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang, Raw, Text, ToolCall
from tests.live import (
    IN_PROCESS_ANSWER,
    TWENTY_WORDS,
    Assembly,
    Seen,
    chunks,
    finals,
    json_answer,
    seen_of,
    seen_sse,
    states,
    tool_updates,
    v03_message,
    v1_message,
)
from tests.servers import fake_env, free_port, serve
from tests.sse import SseStream, open_stream
from tests.utils import REQUESTER_APPROVES
from toolnexus_django.a2a import follow

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

V1 = {"A2A-Version": "1.0"}
#: 20 pieces, 0.03 s apart: several chunks (STREAM_CHUNK_SECONDS is 0.1).
PACED = Text(TWENTY_WORDS, pace=0.03)
#: What the demo's lookup tool returns for it (tests/tools.py): never on a stream.
LOOKUP = ToolCall("lookup", {"code": "ZX-42"})
LOOKUP_OUTPUT = "looked up ZX-42"
EXPENSE = ToolCall("file_expense", {"amount": 12.5, "description": "taxi"})
#: How the example file_expense's output begins (toolnexus_django/examples.py).
EXPENSE_OUTPUT = "Filed expense claim"
#: The start of the system prompt the model is sent (the demo's skills).
SYSTEM_PROMPT = "Skills provide specialized instructions"
LIVE_ID = re.compile(r"\d+\.0\.\d+")


@pytest.fixture(params=["openai", "anthropic"])
def fake(request: pytest.FixtureRequest) -> Iterator[FakeLLM]:
    """The fake model, in each style: its streams are each API's own events."""
    with FakeLLM(style=request.param) as model:
        yield model


@pytest.fixture(autouse=True)
def _no_stream_left_open() -> Iterator[None]:
    yield
    wait_until(lambda: follow.held.count == 0, timeout=10, what="every stream to end")


def stream(url: str, method: str, params: dict[str, Any], **kw: Any) -> list[dict[str, Any]]:
    with open_stream(url, method, params, **kw) as opened:
        assert opened.is_sse
        return opened.rest()


def v03_stream(url: str, text: str, **kw: Any) -> list[Seen]:
    return seen_sse(stream(url, "message/stream", {"message": v03_message(text)}, **kw))


def ordinal(event_id: str) -> tuple[int, ...]:
    return tuple(int(x) for x in event_id.split("."))


def task_id_of(first: Seen) -> str:
    """The Task's id from a stream's first message (v0.3's Task, v1.0's ``task``)."""
    return str(first.raw["task"]["id"] if "task" in first.raw else first.raw["id"])


def assert_chunks_make_the_answer(seen: list[Seen], answer: str, *, ids: bool = True) -> None:
    """More than one chunk, all on the final artifact's id, the first
    starting it, each a prefix of the answer as the client assembles it, all
    of them the answer; then the final artifact, whole; then ``completed``."""
    got = chunks(seen)
    assert len(got) > 1, seen
    [final] = finals(seen)
    assert final.text == answer and final.append is False and final.last_chunk is True
    assert {c.artifact_id for c in got} == {final.artifact_id}, seen
    assert got[0].append is False and all(c.append for c in got[1:]), got
    assembly = Assembly(chunks_only=True).feed(seen)
    assert all(answer.startswith(s) for s in assembly.snapshots), assembly.snapshots
    assert assembly.text() == answer
    # The chunks come between the working status and the final artifact.
    kinds = [s.kind for s in seen]
    assert kinds.index("chunk") > kinds.index("status")
    assert max(i for i, k in enumerate(kinds) if k == "chunk") < kinds.index("artifact")
    assert states(seen)[-1] == "status:completed"
    if ids:
        live = [c.id for c in got]
        assert all(i is not None and LIVE_ID.fullmatch(i) for i in live), live
        every = [ordinal(str(s.id)) for s in seen[1:]]
        assert every == sorted(every) and len(set(every)) == len(every), every


# -- 1. the answer's chunks, in every streaming binding ---------------------------------------


@pytest.mark.parametrize("method", ["message/stream", "SendStreamingMessage"])
def test_json_rpc_streams_show_the_answer_in_chunks_that_make_the_final_artifact(
    agent_url: str, configure: Any, fake: FakeLLM, method: str
) -> None:
    configure(fake)
    fake.push(PACED)
    if method == "message/stream":
        events = stream(agent_url, method, {"message": v03_message("write it")})
    else:
        events = stream(agent_url, method, {"message": v1_message("write it")}, headers=V1)
    seen = seen_sse(events)
    assert_chunks_make_the_answer(seen, TWENTY_WORDS)
    assert states(seen) == ["task:submitted", "status:working", "status:completed"]
    # The model was asked to stream.
    assert fake.requests[-1].body["stream"] is True


def test_http_json_message_stream_shows_the_answer_in_chunks(
    agent_url: str, configure: Any, fake: FakeLLM
) -> None:
    configure(fake)
    fake.push(PACED)
    body = {"message": v1_message("write it over rest")}
    with (
        httpx.Client(timeout=httpx.Timeout(20)) as client,
        client.stream("POST", agent_url + "message:stream", json=body, headers=V1) as response,
    ):
        assert response.status_code == 200
        events = SseStream(response, time.monotonic() + 20).rest()
    seen = seen_sse(events, jsonrpc=False)
    assert_chunks_make_the_answer(seen, TWENTY_WORDS)


async def grpc_stream(address: str, text: str) -> list[Seen]:
    """SendStreamingMessage with the official SDK's generated stub; each
    StreamResponse as its JSON (protobuf's mapping: v1.0's own)."""
    request = SendMessageRequest(
        message=Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    )
    async with grpc.aio.insecure_channel(address) as channel:
        call = a2a_pb2_grpc.A2AServiceStub(channel).SendStreamingMessage(request, timeout=30)
        return [seen_of(MessageToDict(response)) async for response in call]


def test_grpc_send_streaming_message_shows_the_answer_in_chunks(
    fake: FakeLLM, tmp_path: Path
) -> None:
    fake.push(PACED)
    grpc_env = {"TOOLNEXUS_GRPC_ADDRESS": f"127.0.0.1:{free_port()}"}
    with serve(tmp_path, env={**fake_env(fake), **grpc_env}) as server:
        card = server.wait_ready()
        [address] = [
            i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"
        ]
        seen = asyncio.run(asyncio.wait_for(grpc_stream(address, "write it over grpc"), 40))
    assert_chunks_make_the_answer(seen, TWENTY_WORDS, ids=False)
    assert states(seen) == ["task:submitted", "status:working", "status:completed"]


# -- 2. tool calls ----------------------------------------------------------------------------


def model_saw(fake: FakeLLM) -> list[str]:
    """The tool results the model was sent back (what a stream must never
    show), as often as each request repeated them."""
    found = []
    for request in fake.requests:
        for message in request.body.get("messages") or []:
            content = message.get("content")
            if message.get("role") == "tool":
                found.append(str(content))
            elif isinstance(content, list):
                found += [
                    b["content"] if isinstance(b["content"], str) else json.dumps(b["content"])
                    for b in content
                    if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
    return found


def test_tool_calls_are_working_updates_before_the_answer_and_never_their_output(
    agent_url: str, configure: Any, fake: FakeLLM
) -> None:
    configure(fake, TOOLKIT=tools.toolkit_setting())
    # The second call lacks its required argument: it fails.
    fake.push(LOOKUP, ToolCall("lookup", {}), PACED)
    events = stream(agent_url, "message/stream", {"message": v03_message("look ZX-42 up")})
    seen = seen_sse(events)
    assert tool_updates(seen) == [
        ("lookup", "running"),
        ("lookup", "ok"),
        ("lookup", "running"),
        ("lookup", "error"),
    ]
    calls = [s for s in seen if s.tool]
    assert [c.text for c in calls] == [
        'Calling lookup {"code": "ZX-42"}',
        "lookup: done",
        "Calling lookup {}",
        "lookup: failed",
    ]
    assert [c.tool.get("arguments") for c in calls if c.tool] == [{"code": "ZX-42"}, None, {}, None]
    first, second = calls[0].tool, calls[2].tool
    assert first and second and first["callId"] != second["callId"]
    assert [c.tool["callId"] for c in calls if c.tool] == [first["callId"]] * 2 + [
        second["callId"]
    ] * 2
    assert all(c.state == "working" for c in calls)
    # Every tool update comes before the answer's first chunk.
    kinds = [s.kind for s in seen]
    assert seen.index(calls[-1]) < kinds.index("chunk")
    assert_chunks_make_the_answer(seen, TWENTY_WORDS)
    # The tools' outputs, the system prompt: nowhere on the stream.
    wire = json.dumps(events)
    outputs = set(model_saw(fake))
    assert len(outputs) == 2 and LOOKUP_OUTPUT in outputs, outputs
    for secret in (LOOKUP_OUTPUT, SYSTEM_PROMPT, *outputs):
        assert secret not in wire


def test_text_before_tool_calls_is_replaced_by_the_answer(
    agent_url: str, configure: Any, fake: FakeLLM
) -> None:
    """A turn that says something and then calls a tool is not the answer:
    the next turn's first chunk starts the artifact again (append false)."""
    configure(fake, TOOLKIT=tools.toolkit_setting())
    preamble = "Let me look that code up first."
    if fake.style == "anthropic":
        turn = {
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "text", "text": preamble},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"code": "ZX-42"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 2},
        }
    else:
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"code": "ZX-42"})},
        }
        message = {"role": "assistant", "content": preamble, "tool_calls": [call]}
        turn = {
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    # The first turn answers whole (JSON), which the app streams all the same.
    fake.push(Raw(json.dumps(turn).encode()), PACED)
    seen = v03_stream(agent_url, "look ZX-42 up")
    assert tool_updates(seen) == [("lookup", "running"), ("lookup", "ok")]
    first_tool = next(i for i, s in enumerate(seen) if s.tool)
    last_tool = max(i for i, s in enumerate(seen) if s.tool)
    # The first turn's text, shown as it came, then the tool call...
    assert Assembly().feed(seen[:first_tool]).text() == preamble
    # ... then the answer, which starts the artifact anew.
    answer = chunks(seen[last_tool:])
    assert answer[0].append is False and answer[0].text and TWENTY_WORDS.startswith(answer[0].text)
    assert Assembly(chunks_only=True).feed(seen).text() == TWENTY_WORDS
    [final] = finals(seen)
    assert final.text == TWENTY_WORDS
    assert {c.artifact_id for c in chunks(seen)} == {final.artifact_id}


# -- 3. a reconnect mid-answer -------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "follow_up", "headers"),
    [
        ("message/stream", "tasks/resubscribe", {}),
        ("SendStreamingMessage", "SubscribeToTask", V1),
    ],
)
def test_a_reconnect_by_last_event_id_mid_answer_loses_and_doubles_nothing(
    agent_url: str,
    configure: Any,
    fake: FakeLLM,
    method: str,
    follow_up: str,
    headers: dict[str, str],
) -> None:
    configure(fake)
    fake.push(Text(TWENTY_WORDS, pace=0.05))
    message = v03_message("slowly") if not headers else v1_message("slowly")
    before: list[Seen] = []
    with open_stream(agent_url, method, {"message": message}, headers=headers) as opened:
        while not chunks(before):
            event = opened.next()
            assert event is not None, before
            before += seen_sse([event])
    # The client went away after a chunk; it comes back with that chunk's id.
    task_id = task_id_of(before[0])
    last = before[-1]
    assert last.kind == "chunk" and last.id and LIVE_ID.fullmatch(last.id)
    resumed = {**headers, "Last-Event-ID": last.id}
    after = seen_sse(stream(agent_url, follow_up, {"id": task_id}, headers=resumed))
    assert after, "the reconnect got nothing"
    ids = [ordinal(str(s.id)) for s in before[1:] + after]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
    # The client's text, from both connections: exactly the answer.
    assert_chunks_make_the_answer(before + after, TWENTY_WORDS)
    assert after[0].kind == "chunk" and after[0].append is True, after[0]


# -- 4. a resumed Task ----------------------------------------------------------------------


def approval_answer(task: Seen, **configuration: Any) -> dict[str, Any]:
    """The requester's approval (REQUESTER_APPROVES lets it), with the cost
    center file_expense's approval schema asks for."""
    message = v03_message("yes", taskId=task_id_of(task), contextId=task.raw["contextId"])
    message["parts"] = [{"kind": "data", "data": {"cost_center": "travel"}}]
    return {"message": message, **({"configuration": configuration} if configuration else {})}


#: The expense call, coming slowly (its arguments in paced pieces: a stream
#: opened with the Task follows the run by the time it calls), with its own id.
SLOW_EXPENSE = replace(EXPENSE, id="call_expense_1", pace=0.05)


def test_a_call_waiting_for_a_person_shows_before_input_required(
    agent_url: str, configure: Any, fake: FakeLLM
) -> None:
    configure(fake)
    fake.push(SLOW_EXPENSE)
    asked = v03_stream(agent_url, "file my taxi")
    assert states(asked) == ["task:submitted", "status:working", "status:input-required"]
    assert str(asked[-1].text).startswith("Approve an expense claim of 12.50 for 'taxi'?")
    # The stream showed the call start, then wait for a person, then the Task wait.
    assert tool_updates(asked) == [
        ("file_expense", "running"),
        ("file_expense", "input-required"),
    ], [(e.id, e.kind, e.state, e.text) for e in asked]
    calls = [s for s in asked if s.tool]
    assert [c.text for c in calls] == [
        'Calling file_expense {"amount": 12.5, "description": "taxi"}',
        "file_expense: waiting for a person",
    ]
    assert {c.tool["callId"] for c in calls if c.tool} == {"call_expense_1"}
    assert asked.index(calls[-1]) < len(asked) - 1
    assert not chunks(asked) and not finals(asked)


@pytest.mark.parametrize("by", ["message/stream", "tasks/resubscribe"])
def test_a_resumed_task_streams_its_continuation(
    agent_url: str, configure: Any, fake: FakeLLM, by: str
) -> None:
    configure(fake, TOOL_ANSWERERS=REQUESTER_APPROVES)
    answer = "Your taxi claim of 12.5 is filed under travel and will be paid this week."
    # Once resumed, the model holds its answer until the test lets it go.
    fake.push(SLOW_EXPENSE, Hang(then=Text(answer, pace=0.03)))
    asked_events = stream(agent_url, "message/stream", {"message": v03_message("file my taxi")})
    asked = seen_sse(asked_events)
    # (What it shows of the call: the test above.)
    assert states(asked) == ["task:submitted", "status:working", "status:input-required"]
    task = asked[0]

    if by == "message/stream":
        with open_stream(agent_url, "message/stream", approval_answer(task)) as opened:
            fake.wait_held(1)
            fake.release()
            events = opened.rest()
    else:
        rpc = RpcClient(agent_url)
        sent = rpc.call("message/send", approval_answer(task, blocking=False))
        assert sent["result"]["status"]["state"] in ("working", "completed"), sent
        fake.wait_held(1)
        resumed = {"Last-Event-ID": str(asked[-1].id)}
        with open_stream(
            agent_url, "tasks/resubscribe", {"id": task_id_of(task)}, headers=resumed
        ) as opened:
            first = opened.next()
            fake.release()
            events = [first, *opened.rest()] if first is not None else []
    seen = seen_sse(events)
    # The approved call runs (the one that waited: its call id), then the
    # answer's chunks, then the answer.
    assert tool_updates(seen) == [("file_expense", "running"), ("file_expense", "ok")], seen
    assert [s.text for s in seen if s.tool][-1] == "file_expense: done"
    assert {s.tool["callId"] for s in seen if s.tool} == {"call_expense_1"}
    kinds = [("tool" if s.tool else s.kind) for s in seen]
    assert kinds.index("tool") < kinds.index("chunk")
    assert_chunks_make_the_answer(seen, answer)
    wire = json.dumps([asked_events, events])
    assert EXPENSE_OUTPUT not in wire and SYSTEM_PROMPT not in wire
    assert any(EXPENSE_OUTPUT in output for output in model_saw(fake))


# -- 5. what does not stream ------------------------------------------------------------------


def test_a_model_answering_json_to_a_streaming_request_still_gives_the_answer(
    agent_url: str, configure: Any, fake: FakeLLM
) -> None:
    configure(fake)
    fake.push(json_answer(fake.style, TWENTY_WORDS))
    seen = v03_stream(agent_url, "answer whole")
    assert fake.requests[-1].body["stream"] is True  # asked to stream; answered JSON
    [final] = finals(seen)
    assert final.text == TWENTY_WORDS
    # The app reads the JSON answer as a stream of its words: its chunks
    # (what the stream read of them, then the rest as one) make the answer.
    assert Assembly(chunks_only=True).feed(seen).text() == TWENTY_WORDS
    assert {c.artifact_id for c in chunks(seen)} == {final.artifact_id}
    assert states(seen) == ["task:submitted", "status:working", "status:completed"]


def test_a_client_that_cannot_stream_still_completes_a_streamed_task(
    agent_url: str, configure: Any
) -> None:
    configure(None, client="tests.live.unstreamable_client")
    for attempt in ("first", "second"):  # the second goes straight to run()
        seen = v03_stream(agent_url, f"{attempt} answer")
        assert states(seen) == ["task:submitted", "status:working", "status:completed"]
        assert not tool_updates(seen)
        [final] = finals(seen)
        assert final.text == IN_PROCESS_ANSWER
        # The model wrote no chunk; the answer may come as one before the final
        # artifact (a stream sends the part of a streamed Task's answer its
        # client lacks), never as anything else.
        assert Assembly(chunks_only=True).feed(seen).text() in ("", IN_PROCESS_ANSWER)
        assert len(chunks(seen)) <= 1


def test_blocking_and_polling_clients_see_no_chunk(
    agent_url: str, configure: Any, fake: FakeLLM
) -> None:
    configure(fake)
    rpc = RpcClient(agent_url)
    # A blocking send: the finished Task, one artifact; the model never streamed.
    fake.push(PACED)
    sent = rpc.call(
        "message/send",
        {"message": v03_message("wait for it"), "configuration": {"blocking": True}},
    )["result"]
    assert sent["status"]["state"] == "completed"
    [artifact] = sent["artifacts"]
    assert artifact["parts"] == [{"kind": "text", "text": TWENTY_WORDS}]
    assert "stream" not in fake.requests[-1].body

    # A streamed Task polled while its answer streams: no artifact yet; then one.
    fake.push(Text(TWENTY_WORDS, pace=0.05))
    with open_stream(agent_url, "message/stream", {"message": v03_message("poll me")}) as opened:
        seen: list[Seen] = []
        while not chunks(seen):
            event = opened.next()
            assert event is not None, seen
            seen += seen_sse([event])
        task_id = task_id_of(seen[0])
        polled = rpc.call("tasks/get", {"id": task_id})["result"]
        seen += seen_sse(opened.rest())
    if polled["status"]["state"] == "working":
        assert not polled.get("artifacts"), polled
    done = rpc.call("tasks/get", {"id": task_id})["result"]
    [artifact] = done["artifacts"]
    assert artifact["parts"] == [{"kind": "text", "text": TWENTY_WORDS}]
    assert artifact["artifactId"] == chunks(seen)[0].artifact_id
    v1_done = RpcClient(agent_url, V1).call("GetTask", {"id": task_id})["result"]
    assert [a["parts"] for a in v1_done["artifacts"]] == [[{"text": TWENTY_WORDS}]]


def test_with_live_updates_off_a_stream_shows_the_moves_only(
    agent_url: str, configure: Any, fake: FakeLLM
) -> None:
    configure(fake, TOOLKIT=tools.toolkit_setting(), STREAM_LIVE_UPDATES=False)
    fake.push(LOOKUP, PACED)
    seen = v03_stream(agent_url, "look ZX-42 up")
    assert [s.kind for s in seen] == ["task", "status", "artifact", "status"]
    assert states(seen) == ["task:submitted", "status:working", "status:completed"]
    assert finals(seen)[0].text == TWENTY_WORDS
    assert all("stream" not in r.body for r in fake.requests)
