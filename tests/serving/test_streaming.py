"""Streaming (Server-Sent Events) over real HTTP: message/stream and
SendStreamingMessage to their last event, resubscribing, bounded lifetimes,
and clients that go away."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2
from google.protobuf.json_format import ParseDict

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang, Text, ToolCall
from tests.sse import open_stream, split
from tests.utils import REQUESTER_APPROVES
from toolnexus_django.a2a import follow
from toolnexus_django.lifecycle import wakeups

pytestmark = pytest.mark.django_db(transaction=True)

V1 = {"A2A-Version": "1.0"}
EXPENSE = ToolCall("file_expense", {"amount": 12.5, "description": "taxi"})


def v03_message(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


def v1_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def results(events: list[dict[str, Any]]) -> list[Any]:
    for event in events:
        assert event["event"] == "message", event
        assert event["data"]["jsonrpc"] == "2.0" and event["data"]["id"] == "s-1"
    return [e["data"]["result"] for e in events]


def v03_kinds(items: list[Any]) -> list[tuple[str, str | None]]:
    """(kind, state) of v0.3 events, validated by the official SDK's v0.3 types."""
    out = []
    for item in items:
        v03.SendStreamingMessageSuccessResponse.model_validate({"id": 1, "result": item})
        state = (item.get("status") or {}).get("state")
        out.append((item["kind"], state))
    return out


@pytest.fixture(autouse=True)
def _no_stream_left_open() -> Iterator[None]:
    yield
    wait_until(lambda: follow.held.count == 0, timeout=10, what="every stream to end")


# -- message/stream (v0.3) -----------------------------------------------------------


def test_message_stream_follows_the_task_to_the_final_event(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(Hang(then=Text("streamed result")))
    with open_stream(agent_url, "message/stream", {"message": v03_message("go")}) as stream:
        assert stream.is_sse
        assert stream.response.headers["cache-control"] == "no-store"
        first = results([stream.next()])[0]
        assert first["kind"] == "task" and first["status"]["state"] == "submitted"
        fake_llm.wait_held(1)
        working = results([stream.next()])[0]
        assert (working["kind"], working["status"]["state"]) == ("status-update", "working")
        assert working["final"] is False and working["taskId"] == first["id"]
        fake_llm.release()
        rest = results(stream.rest())

    # Between WORKING and the final event: the live updates of the run.
    streamed = split(rest)
    v03_kinds(streamed.live)
    # The model answers at once: chunks, when the stream caught any, make the answer.
    streamed.assert_answer_streamed(required=True)
    assert v03_kinds(streamed.moves) == [("artifact-update", None), ("status-update", "completed")]
    artifact, final = streamed.moves
    assert artifact["artifact"]["parts"] == [{"kind": "text", "text": "streamed result"}]
    assert artifact["taskId"] == first["id"] and artifact["contextId"] == first["contextId"]
    assert final["final"] is True
    v03_kinds([first, working])


def test_input_required_ends_the_stream(agent_url: str, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm, TOOL_ANSWERERS=REQUESTER_APPROVES)
    fake_llm.push(EXPENSE, Text("filed after all"))
    params = {"message": v03_message("file an expense of 12.5 for a taxi")}
    with open_stream(agent_url, "message/stream", params) as stream:
        items = results(stream.rest())
    kinds = v03_kinds(items)
    assert kinds[0] == ("task", "submitted")
    assert kinds[-1] == ("status-update", "input-required")
    assert items[-1]["final"] is True
    assert "Approve an expense claim" in items[-1]["status"]["message"]["parts"][0]["text"]
    assert all(not i.get("final") for i in items[:-1])

    # Continuing by a streamed message carrying the taskId streams the rest.
    task_id = items[0]["id"]
    answer = v03_message("yes", taskId=task_id, contextId=items[0]["contextId"])
    # The approval's schema asks for a cost center: plain text would break it.
    answer["parts"] = [{"kind": "data", "data": {"cost_center": "travel"}}]
    with open_stream(agent_url, "message/stream", {"message": answer}) as stream:
        items = results(stream.rest())
    assert items[0]["kind"] == "task" and items[0]["status"]["state"] == "working"
    assert v03_kinds(items)[-1] == ("status-update", "completed")
    assert items[-2]["artifact"]["parts"][0]["text"] == "filed after all"


# -- SendStreamingMessage (v1.0) ----------------------------------------------------------


def test_send_streaming_message_v1(agent_url: str, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm)
    fake_llm.push(Hang(then=Text("v1 streamed")))
    with open_stream(
        agent_url, "SendStreamingMessage", {"message": v1_message("go")}, headers=V1
    ) as stream:
        first = results([stream.next()])[0]
        fake_llm.wait_held(1)
        fake_llm.release()
        rest = results(stream.rest())
    items = [first, *rest]
    for item in items:
        ParseDict(item, a2a_pb2.StreamResponse(), ignore_unknown_fields=False)
    streamed = split(items)
    streamed.assert_answer_streamed(required=True)
    moves = streamed.moves
    assert first["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert first["task"]["history"][0]["role"] == "ROLE_USER"
    kinds = [next(iter(item)) for item in moves]
    assert kinds[0] == "task" and kinds[-2:] == ["artifactUpdate", "statusUpdate"]
    assert set(kinds[1:-2]) <= {"statusUpdate"}
    assert moves[-2]["artifactUpdate"]["artifact"]["parts"] == [{"text": "v1 streamed"}]
    final = rest[-1]["statusUpdate"]
    assert final["status"]["state"] == "TASK_STATE_COMPLETED"
    assert final["taskId"] == first["task"]["id"]
    assert "final" not in final  # v1.0 has no such field: the stream just ends


def test_streaming_errors_before_the_stream_are_plain_json(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    rpc = RpcClient(agent_url)
    assert rpc.call("tasks/resubscribe", {"id": "nope"})["error"]["code"] == -32001
    bad = rpc.call(
        "message/stream", {"message": {"messageId": "m-empty", "role": "user", "parts": []}}
    )
    assert bad["error"]["code"] == -32602
    v1 = RpcClient(agent_url, V1).call("SubscribeToTask", {"id": "nope"})
    assert v1["error"]["code"] == -32001 and v1["error"]["data"][0]["reason"] == "TASK_NOT_FOUND"

    fake_llm.push(Text("done"))
    task = rpc.send("finish first")
    rpc.wait(task["id"])
    terminal = rpc.call("tasks/resubscribe", {"id": task["id"]})
    assert terminal["error"]["code"] == -32004


# -- resubscribing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "headers"), [("tasks/resubscribe", {}), ("SubscribeToTask", V1)]
)
def test_resubscribe_to_a_running_task_gets_the_rest(
    agent_url: str,
    configure: Any,
    fake_llm: FakeLLM,
    method: str,
    headers: dict[str, str],
) -> None:
    configure(fake_llm)
    fake_llm.push(Hang(then=Text("the rest")))
    rpc = RpcClient(agent_url)
    task = rpc.send("long job")
    fake_llm.wait_held(1)
    rpc.wait(task["id"], states=("working",))
    with open_stream(agent_url, method, {"id": task["id"]}, headers=headers) as stream:
        first = results([stream.next()])[0]
        fake_llm.release()
        rest = results(stream.rest())
    if method == "tasks/resubscribe":
        assert first["kind"] == "task" and first["status"]["state"] == "working"
        assert v03_kinds(rest) == [("artifact-update", None), ("status-update", "completed")]
        assert rest[0]["artifact"]["parts"][0]["text"] == "the rest"
    else:
        assert first["task"]["status"]["state"] == "TASK_STATE_WORKING"
        assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert rest[0]["artifactUpdate"]["artifact"]["parts"] == [{"text": "the rest"}]


def test_subscribing_to_a_waiting_task_gives_the_task_and_ends(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(EXPENSE)
    rpc = RpcClient(agent_url)
    task = rpc.send("file an expense of 1 for a pen")
    rpc.wait(task["id"])
    with open_stream(agent_url, "tasks/resubscribe", {"id": task["id"]}) as stream:
        items = results(stream.rest())
    assert len(items) == 1 and items[0]["status"]["state"] == "input-required"


# -- bounded life, keep-alive, vanished clients ------------------------------------------------


def test_a_stream_ends_at_its_max_duration_and_keeps_alive_meanwhile(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, STREAM_MAX_SECONDS=1.0, STREAM_HEARTBEAT=0.2)
    fake_llm.push(Hang(then=Text("after the stream")))
    t0 = time.monotonic()
    with open_stream(agent_url, "message/stream", {"message": v03_message("slow")}) as stream:
        items = results(stream.rest())
        comments = stream.comments
    elapsed = time.monotonic() - t0
    assert 0.9 <= elapsed < 8, elapsed
    # No final event: the client may resubscribe.
    assert not any(i.get("final") for i in items)
    assert comments >= 2
    fake_llm.wait_held(1)
    fake_llm.release()
    RpcClient(agent_url).wait(items[0]["id"], states=("completed",))


def test_a_client_that_goes_away_costs_nothing_more(
    agent_url: str, configure: Any, fake_llm: FakeLLM, request: pytest.FixtureRequest
) -> None:
    configure(fake_llm, STREAM_HEARTBEAT=0.1)
    fake_llm.push(Hang(then=Text("nobody listens")))
    threaded = "wsgi" in request.node.callspec.id  # a stream holds a thread (and a slot)
    with open_stream(agent_url, "message/stream", {"message": v03_message("bye")}) as stream:
        first = results([stream.next()])[0]
        fake_llm.wait_held(1)
        assert wakeups.hub().watching == 1
        assert follow.held.count == (1 if threaded else 0)
    # The client hung up mid-stream. The server notices (WSGI: at its next
    # write, a keep-alive; ASGI: at once) and stops following: the stream
    # watches nothing any more and its slot is free again.
    wait_until(lambda: wakeups.hub().watching == 0, timeout=10, what="the stream to stop")
    assert follow.held.count == 0
    # The server is fine: the next requests are served, the run goes on.
    rpc = RpcClient(agent_url)
    assert rpc.get(first["id"], method="tasks/get")["result"]["status"]["state"] == "working"
    fake_llm.release()
    assert rpc.wait(first["id"])["status"]["state"] == "completed"


def test_stopping_the_server_ends_open_streams(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(Hang(then=Text("done anyway")))
    try:
        with open_stream(agent_url, "message/stream", {"message": v03_message("x")}) as stream:
            first = results([stream.next()])[0]
            fake_llm.wait_held(1)
            follow.stop_waiting()
            rest = stream.rest()
        assert not any(e["data"]["result"].get("final") for e in rest)
    finally:
        follow.resume_waiting()
        fake_llm.release()
    RpcClient(agent_url).wait(first["id"], states=("completed",))


# -- another process -----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_stream_follows_a_run_in_another_process(
    agent_url: str, configure: Any, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """The Task runs in a toolnexus_serve subprocess; this process's endpoint
    streams it: the stream reads the shared store, not an in-process queue."""
    from tests.servers import fake_env, serve

    configure(fake_llm, store="django")
    fake_llm.push(Hang(then=Text("from the other process")))
    with serve(tmp_path, env=fake_env(fake_llm)) as server:
        card = server.wait_ready()
        other = RpcClient(card["url"])
        task = other.send("run it over there")
        fake_llm.wait_held(1)
        with open_stream(agent_url, "SubscribeToTask", {"id": task["id"]}, headers=V1) as stream:
            first = results([stream.next()])[0]
            fake_llm.release()
            rest = results(stream.rest())
    assert first["task"]["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    artifact = next(r for r in rest if "artifactUpdate" in r)
    assert artifact["artifactUpdate"]["artifact"]["parts"] == [{"text": "from the other process"}]
