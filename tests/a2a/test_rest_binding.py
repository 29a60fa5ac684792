"""The HTTP+JSON binding (A2A v1.0 §11, toolnexus_django/a2a/rest.py), over real
HTTP on both servers: the same Tasks and the same errors as JSON-RPC, errors
as HTTP status codes with a ``google.rpc.Status`` body, streams over SSE.
(The official SDK's REST transport runs the full scenarios in test_a2a_sdk.py.)"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx

from tests.conftest import RpcClient, basic, http
from tests.fakes import FakeLLM, Hang, Text, ToolCall
from tests.sse import SseStream, ordinal, split

V1 = {"A2A-Version": "1.0"}
BASIC_ONLY = {
    "AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
    "PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
}


def message(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **fields,
    }


def rest(
    agent_url: str,
    method: str,
    route: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> Any:
    data = (
        None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    )
    return http(
        agent_url + route,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", **(headers or {})},
    )


def reason(reply: Any) -> str:
    (info,) = reply.json["error"]["details"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert reply.json["error"]["code"] == reply.status
    return str(info["reason"])


def wait_state(agent_url: str, task_id: str, *states: str, headers: Any = None) -> Any:
    deadline = time.monotonic() + 20
    while True:
        task = rest(agent_url, "GET", f"tasks/{task_id}", headers=headers).json
        if task["status"]["state"] in states:
            return task
        assert time.monotonic() < deadline, f"stuck in {task['status']['state']}"
        time.sleep(0.02)


# -- the same operations as JSON-RPC -----------------------------------------------------


def test_send_get_list_and_cancel_are_the_json_rpc_operations(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.on("summarise this", Text("a summary"))
    sent = rest(agent_url, "POST", "message:send", {"message": message("summarise this")})
    # A2A's own media type on HTTP+JSON answers (v1.0.1 §11.1, as the official SDK's server).
    assert sent.status == 200 and sent.headers["content-type"] == "application/a2a+json"
    task = sent.json["task"]  # a SendMessageResponse, as on JSON-RPC
    done = wait_state(agent_url, task["id"], "TASK_STATE_COMPLETED")
    assert done["artifacts"][0]["parts"] == [{"text": "a summary"}]

    # The very Task JSON-RPC GetTask returns.
    over_rpc = RpcClient(agent_url, V1).call("GetTask", {"id": task["id"]})["result"]
    assert rest(agent_url, "GET", f"tasks/{task['id']}").json == over_rpc
    one = rest(agent_url, "GET", f"tasks/{task['id']}?historyLength=1").json
    assert len(one["history"]) == 1

    listed = rest(
        agent_url, "GET", "tasks?status=TASK_STATE_COMPLETED&pageSize=10&includeArtifacts=true"
    ).json
    assert task["id"] in [t["id"] for t in listed["tasks"]]
    assert listed["pageSize"] == 10 and all("artifacts" in t for t in listed["tasks"])
    bare = rest(agent_url, "GET", "tasks?pageSize=10").json
    assert all("artifacts" not in t for t in bare["tasks"])

    # A finished Task cannot be canceled: the JSON-RPC error, as HTTP 400.
    refused = rest(agent_url, "POST", f"tasks/{task['id']}:cancel", {})
    assert refused.status == 400 and reason(refused) == "TASK_NOT_CANCELABLE"
    assert refused.json["error"]["status"] == "FAILED_PRECONDITION"

    fake_llm.on("a long job", Hang(max_seconds=20, then=Text("never")))
    running = rest(
        agent_url,
        "POST",
        "message:send",
        {"message": message("a long job"), "configuration": {"returnImmediately": True}},
    ).json["task"]
    fake_llm.wait_held(1)
    canceled = rest(agent_url, "POST", f"tasks/{running['id']}:cancel")
    assert canceled.status == 200 and canceled.json["status"]["state"] == "TASK_STATE_CANCELED"
    fake_llm.release()


def test_a_blocking_send_and_an_answer_by_message(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(ToolCall("ask_requester", {"question": "Which city?"}), Text("booked for Lisbon"))
    # Without returnImmediately a send waits until the Task stops: here, on a question.
    waiting = rest(agent_url, "POST", "message:send", {"message": message("book a trip")})
    task = waiting.json["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answer = message("Lisbon", taskId=task["id"], contextId=task["contextId"])
    done = rest(agent_url, "POST", "message:send", {"message": answer}).json["task"]
    assert done["id"] == task["id"] and done["status"]["state"] == "TASK_STATE_COMPLETED"


def test_errors_are_http_status_codes_with_a_status_body(
    agent_url: str, configure: Any, fake_llm: FakeLLM, settings: Any
) -> None:
    configure(fake_llm)
    missing = rest(agent_url, "GET", "tasks/no-such-task")
    assert missing.status == 404 and reason(missing) == "TASK_NOT_FOUND"
    assert missing.headers["content-type"] == "application/a2a+json"
    assert missing.json["error"]["status"] == "NOT_FOUND"
    assert rest(agent_url, "POST", "tasks/no-such-task:cancel").status == 404

    not_json = rest(agent_url, "POST", "message:send", b"{not json")
    assert not_json.status == 400 and reason(not_json) == "INVALID_REQUEST"
    no_text = rest(agent_url, "POST", "message:send", {"message": {"role": "ROLE_USER"}})
    assert no_text.status == 400 and reason(no_text) == "INVALID_PARAMS"
    nan = rest(agent_url, "POST", "message:send", b'{"message": {"x": NaN}}')
    assert nan.status == 400 and reason(nan) == "INVALID_PARAMS"
    too_deep = rest(agent_url, "POST", "message:send", b"[" * 5000 + b"]" * 5000)
    assert too_deep.status == 400 and reason(too_deep) == "INVALID_REQUEST"
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    big = rest(agent_url, "POST", "message:send", {"message": message("x" * 2000)})
    assert big.status == 400 and reason(big) == "INVALID_REQUEST"
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

    wrong = rest(agent_url, "GET", "message:send")
    assert wrong.status == 405 and wrong.headers["allow"] == "POST"
    assert rest(agent_url, "DELETE", "tasks").headers["allow"] == "GET"
    push = rest(agent_url, "POST", "tasks/t-1/pushNotificationConfigs", {"url": "http://x"})
    assert push.status == 404 and reason(push) == "TASK_NOT_FOUND"  # an unknown Task's
    old = rest(agent_url, "GET", "tasks", headers={"A2A-Version": "0.3"})
    assert old.status == 400 and reason(old) == "VERSION_NOT_SUPPORTED"
    assert rest(agent_url, "GET", "tasks?A2A-Version=1.0").status == 200
    listed_badly = rest(agent_url, "GET", "tasks?pageSize=1000")
    assert listed_badly.status == 400 and reason(listed_badly) == "INVALID_PARAMS"
    anon_card = rest(agent_url, "GET", "extendedAgentCard")
    # An open endpoint's card declares no extended card (nobody can authenticate).
    assert anon_card.status == 400 and reason(anon_card) == "UNSUPPORTED_OPERATION"
    # The server keeps serving.
    assert rest(agent_url, "GET", "tasks").status == 200


# -- streams ---------------------------------------------------------------------------------


def stream(url: str, method: str, body: Any = None, headers: Any = None) -> Any:
    client = httpx.Client(timeout=httpx.Timeout(20))
    return client, client.stream(method, url, json=body, headers={**V1, **(headers or {})})


def test_streams_are_sse_of_stream_responses_and_resume_by_last_event_id(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.on("stream me", Text("streamed"))
    client, request = stream(
        agent_url + "message:stream", "POST", {"message": message("stream me")}
    )
    with client, request as response:
        assert response.status_code == 200
        events = SseStream(response, time.monotonic() + 20).rest()
    # Bare StreamResponse objects (no JSON-RPC envelope), each with an id.
    assert "task" in events[0]["data"] and "jsonrpc" not in events[0]["data"]
    # Between the moves, the run's live updates (the answer as it is written).
    streamed = split(events)
    moves = streamed.moves
    states = [
        e["data"]["statusUpdate"]["status"]["state"] for e in moves if "statusUpdate" in e["data"]
    ]
    assert states == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert any(e["data"].get("artifactUpdate") for e in moves)
    assert all(e["id"] for e in events[1:])
    streamed.assert_answer_streamed(required=True)
    task_id = events[0]["data"]["task"]["id"]

    # A reconnect after the first status update replays exactly what followed.
    first_update = next(e for e in moves if "statusUpdate" in e["data"])
    client, request = stream(
        agent_url + f"tasks/{task_id}:subscribe",
        "GET",
        headers={"Last-Event-ID": first_update["id"]},
    )
    with client, request as response:
        again = SseStream(response, time.monotonic() + 20).rest()
    later = events[events.index(first_update) + 1 :]
    # Every move that followed, with its id; nothing from before the id. (The
    # run is over: its live updates are gone, its final artifact has the answer.)
    assert [(e["id"], e["data"]) for e in split(again).moves] == [
        (e["id"], e["data"]) for e in split(later).moves
    ]
    assert all(ordinal(e["id"]) > ordinal(first_update["id"]) for e in again)

    # Subscribing to a finished Task without an id: refused before any stream starts.
    client, request = stream(agent_url + f"tasks/{task_id}:subscribe", "POST")
    with client, request as response:
        assert response.status_code == 400
        assert (
            json.loads(response.read())["error"]["details"][0]["reason"] == "UNSUPPORTED_OPERATION"
        )


# -- who is calling --------------------------------------------------------------------------


def test_rest_is_authenticated_and_owner_scoped_like_json_rpc(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: Any
) -> None:
    configure(fake_llm, **BASIC_ONLY)
    fake_llm.default = Text("done")
    assert rest(agent_url, "GET", "tasks").status == 401  # DRF's refusal
    sent = rest(
        agent_url,
        "POST",
        "message:send",
        {"message": message("mine"), "configuration": {"returnImmediately": True}},
        headers=basic("alice"),
    )
    task_id = sent.json["task"]["id"]
    assert rest(agent_url, "GET", f"tasks/{task_id}", headers=basic("alice")).status == 200
    # Another owner's Task answers exactly like an unknown one.
    hidden = rest(agent_url, "GET", f"tasks/{task_id}", headers=basic("bob"))
    assert hidden.status == 404 and reason(hidden) == "TASK_NOT_FOUND"
    assert rest(agent_url, "GET", "tasks", headers=basic("bob")).json["tasks"] == []
