"""The A2A v1.0 dialect, ListTasks, cancel and blocking sends, over real HTTP.

Shapes are checked against the official a2a-sdk's own protobuf types (a strict
parse: an unknown or misspelt field fails), besides the assertions here.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import toolnexus
from a2a.types import a2a_pb2
from google.protobuf.json_format import ParseDict

from tests.conftest import RpcClient, basic, http, wait_until
from tests.fakes import FakeLLM, Hang, Text, ToolCall
from tests.utils import REQUESTER_APPROVES
from toolnexus_django.a2a import follow
from toolnexus_django.stores import get_task_store

pytestmark = pytest.mark.django_db(transaction=True)

V1 = {"A2A-Version": "1.0"}
EXPENSE = ToolCall("file_expense", {"amount": 12.5, "description": "taxi"})
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
V1_STATES = {
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_AUTH_REQUIRED",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
}
SETTLED_V1 = (
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_AUTH_REQUIRED",
)


def strict(payload: Any, message: Any) -> Any:
    """Parse with the SDK's protobuf types, refusing unknown fields."""
    return ParseDict(payload, message, ignore_unknown_fields=False)


def v1_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def result(reply: dict[str, Any]) -> Any:
    assert "result" in reply, reply
    return reply["result"]


def error(reply: dict[str, Any], code: int) -> dict[str, Any]:
    assert "error" in reply, reply
    assert reply["error"]["code"] == code, reply
    return reply["error"]


class V1Client(RpcClient):
    """RpcClient speaking v1.0 (the header on every request)."""

    def __init__(self, endpoint: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(endpoint, {**V1, **(headers or {})})

    def send_v1(self, text: str, *, wait: bool = False, **message: Any) -> dict[str, Any]:
        params = {
            "message": v1_message(text, **message),
            "configuration": {"returnImmediately": not wait},
        }
        body = result(self.call("SendMessage", params))
        strict(body, a2a_pb2.SendMessageResponse())
        return body["task"]

    def get_v1(self, task_id: str, **params: Any) -> dict[str, Any]:
        return self.call("GetTask", {"id": task_id, **params})

    def wait_v1(self, task_id: str, states: tuple[str, ...] = SETTLED_V1) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            task = result(self.get_v1(task_id))
            return task if task["status"]["state"] in states else None

        return wait_until(probe, timeout=20, what=f"task {task_id} in {states}")


@pytest.fixture
def v1(agent_url: str) -> V1Client:
    return V1Client(agent_url)


def with_auth(configure: Any, fake: FakeLLM | None, **kw: Any) -> None:
    configure(
        fake,
        AUTHENTICATION_CLASSES=["rest_framework.authentication.BasicAuthentication"],
        PERMISSION_CLASSES=["rest_framework.permissions.AllowAny"],
        **kw,
    )


# -- the card ----------------------------------------------------------------------


def test_the_card_is_a_union_for_every_client(live_server: Any, configure: Any) -> None:
    configure(None)
    card = http(f"{live_server.url}/agent/.well-known/agent-card.json").json
    endpoint = f"{live_server.url}/agent/"
    # Legacy fields: toolnexus's outbound client and v0.3 clients.
    assert card["url"] == endpoint
    assert card["protocolVersion"] == "0.3"  # Major.Minor (v1.0 §3.6)
    assert card["preferredTransport"] == "JSONRPC"
    # v1.0 clients: the JSON-RPC endpoint once per protocol version, and the
    # HTTP+JSON binding, whose routes live under the same URL (<url>/message:send).
    assert card["supportedInterfaces"] == [
        {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": endpoint, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    ]
    # Push notifications: offered with the django store (the demo's).
    assert card["capabilities"] == {"streaming": True, "pushNotifications": True}
    assert all(skill["tags"] for skill in card["skills"])
    # Modes are media types in both versions: text, and data parts (an answer
    # comes in as one, a pending Request goes out as one).
    modes = ["text/plain", "application/json"]
    assert card["defaultInputModes"] == card["defaultOutputModes"] == modes
    assert not any("inputModes" in s or "outputModes" in s for s in card["skills"])
    parsed = ParseDict(card, a2a_pb2.AgentCard(), ignore_unknown_fields=True)
    assert list(parsed.default_input_modes) == list(parsed.default_output_modes) == modes
    assert [i.protocol_version for i in parsed.supported_interfaces] == ["1.0", "1.0", "0.3"]
    assert [i.protocol_binding for i in parsed.supported_interfaces] == [
        "JSONRPC",
        "HTTP+JSON",
        "JSONRPC",
    ]
    assert parsed.capabilities.streaming is True


# -- v1.0 shapes -------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.0", "1.0.0", "1"])
def test_v1_send_and_get_have_v1_shapes(
    agent_url: str, configure: Any, fake_llm: FakeLLM, version: str
) -> None:
    configure(fake_llm)
    fake_llm.push(Text("filed: EXP-1"))
    client = V1Client(agent_url, {"A2A-Version": version})

    submitted = client.send_v1("file my claim")
    assert submitted["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert "kind" not in submitted
    [first] = submitted["history"]
    assert first["role"] == "ROLE_USER"
    assert first["parts"] == [{"text": "file my claim"}]
    assert first["taskId"] == submitted["id"]
    assert first["contextId"] == submitted["contextId"]

    done = client.wait_v1(submitted["id"])
    # GetTask returns the bare Task.
    strict(done, a2a_pb2.Task())
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert RFC3339.match(done["status"]["timestamp"]), done["status"]
    assert [a["parts"] for a in done["artifacts"]] == [[{"text": "filed: EXP-1"}]]
    assert done["artifacts"][0]["artifactId"]
    assert [m["role"] for m in done["history"]] == ["ROLE_USER", "ROLE_AGENT"]
    assert done["history"][1]["parts"] == [{"text": "filed: EXP-1"}]
    raw = json.dumps(done)
    for private in ("_private", "owner", "transcript", '"kind"'):
        assert private not in raw


def test_v1_send_waits_by_default(v1: V1Client, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm)
    fake_llm.push(Text("waited for"))
    # No configuration: returnImmediately is false, so the send blocks.
    body = result(v1.call("SendMessage", {"message": v1_message("block please")}))
    strict(body, a2a_pb2.SendMessageResponse())
    assert body["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert body["task"]["artifacts"][0]["parts"] == [{"text": "waited for"}]
    # ... and with historyLength applied to what it returns.
    fake_llm.push(Text("again"))
    body = result(
        v1.call(
            "SendMessage",
            {"message": v1_message("once more"), "configuration": {"historyLength": 1}},
        )
    )
    assert [m["role"] for m in body["task"]["history"]] == ["ROLE_AGENT"]


def test_v1_parts_round_trip_and_are_stored_canonically(
    v1: V1Client, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="django")
    fake_llm.default = Text("seen")
    parts = [
        {"text": "look at these"},
        {"data": {"amount": 12.5, "tags": ["taxi"]}},
        {"data": [1, 2, 3]},
        # Files of the types the agent accepts (others are -32005: test_content_types.py).
        {"raw": base64.b64encode(b"a note").decode(), "mediaType": "text/plain"},
        {
            "url": "https://example.invalid/r.json",
            "mediaType": "application/json",
            "filename": "r.json",
        },
        {"text": "with metadata", "metadata": {"source": "scanner"}},
    ]
    task = result(
        v1.call(
            "SendMessage",
            {
                "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": parts},
                "configuration": {"returnImmediately": True},
            },
        )
    )["task"]
    assert task["history"][0]["parts"] == parts
    assert task["history"][0]["messageId"] == "m-1"

    stored = get_task_store().get(task["id"])
    assert stored is not None
    assert stored["history"][0]["role"] == "user"
    assert [p["kind"] for p in stored["history"][0]["parts"]] == [
        "text",
        "data",
        "data",
        "file",
        "file",
        "text",
    ]
    assert stored["history"][0]["parts"][3]["file"] == {
        "bytes": parts[3]["raw"],
        "mimeType": "text/plain",
    }
    assert stored["history"][0]["parts"][4]["file"]["uri"] == parts[4]["url"]
    # The same Task read through v0.3 keeps the v0.3 shapes.
    legacy = RpcClient(v1.endpoint).get(task["id"], method="tasks/get")["result"]
    assert legacy["kind"] == "task"
    assert legacy["history"][0]["parts"][0] == {"kind": "text", "text": "look at these"}
    # And the model saw the text parts.
    done = v1.wait_v1(task["id"])
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "look at these" in fake_llm.requests[0].first_user_text


def test_v1_history_length(v1: V1Client, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm)
    fake_llm.push(Text("reply"))
    task = v1.send_v1("hello")
    v1.wait_v1(task["id"])
    assert "history" not in result(v1.get_v1(task["id"], historyLength=0))
    last = result(v1.get_v1(task["id"], historyLength=1))["history"]
    assert [m["role"] for m in last] == ["ROLE_AGENT"]
    assert len(result(v1.get_v1(task["id"]))["history"]) == 2
    # v0.3 reads 0 as "no limit" (as the official SDK does).
    legacy = RpcClient(v1.endpoint).call("tasks/get", {"id": task["id"], "historyLength": 0})
    assert len(legacy["result"]["history"]) == 2
    error(v1.get_v1(task["id"], historyLength=-1), -32602)


def test_v1_input_required_continue_and_cancel(
    v1: V1Client, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOL_ANSWERERS=REQUESTER_APPROVES)
    fake_llm.push(EXPENSE, Text("filed over v1"))
    task = v1.send_v1("file an expense of 12.5 for a taxi", wait=True)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    prompt = task["status"]["message"]
    assert prompt["role"] == "ROLE_AGENT"
    assert "Approve an expense claim" in prompt["parts"][0]["text"]

    # A message carrying the taskId answers it; the send waits for the outcome.
    answer = v1_message("yes", taskId=task["id"], contextId=task["contextId"])
    answer["parts"] = [{"data": {"cost_center": "travel"}}]
    reply = v1.call("SendMessage", {"message": answer})
    done = result(reply)["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", done
    assert done["artifacts"][0]["parts"] == [{"text": "filed over v1"}]

    # A second expense: canceled while it waits for a person.
    fake_llm.push(EXPENSE)
    waiting = v1.send_v1("file an expense of 3 for coffee", wait=True)
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    canceled = result(v1.call("CancelTask", {"id": waiting["id"]}))
    strict(canceled, a2a_pb2.Task())
    assert canceled["id"] == waiting["id"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    requests_before = len(fake_llm.requests)
    again = error(v1.call("CancelTask", {"id": waiting["id"]}), -32002)
    assert again["data"][0]["reason"] == "TASK_NOT_CANCELABLE"
    # Canceled without resuming: the model is not called again, and the Task
    # cannot be continued.
    stale = v1.call(
        "SendMessage",
        {"message": v1_message("approve", taskId=waiting["id"])},
    )
    error(stale, -32004)
    assert result(v1.get_v1(waiting["id"]))["status"]["state"] == "TASK_STATE_CANCELED"
    assert len(fake_llm.requests) == requests_before


def test_cancel_terminal_unknown_and_v03_names(
    agent_url: str, v1: V1Client, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(Text("done"), EXPENSE)
    done = v1.send_v1("finish", wait=True)
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    error(v1.call("CancelTask", {"id": done["id"]}), -32002)
    error(v1.call("CancelTask", {"id": "no-such-task"}), -32001)
    error(v1.call("CancelTask", {}), -32602)

    legacy = RpcClient(agent_url)
    waiting = legacy.call("message/send", {"message": _v03("file an expense of 7 for lunch")})
    assert waiting["result"]["status"]["state"] == "input-required"
    canceled = legacy.call("tasks/cancel", {"id": waiting["result"]["id"]})["result"]
    assert canceled["kind"] == "task" and canceled["status"]["state"] == "canceled"
    refused = legacy.call("tasks/cancel", {"id": waiting["result"]["id"]})
    assert refused["error"]["code"] == -32002
    # v0.3 errors keep their plain shape (no v1.0 details list).
    assert not isinstance(refused["error"].get("data"), list)
    assert legacy.call("tasks/cancel", {"id": "nope"})["error"]["code"] == -32001


def test_cancel_of_a_running_task(v1: V1Client, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm)
    fake_llm.push(Hang(then=Text("too late")))
    task = v1.send_v1("slow one")
    fake_llm.wait_held(1)
    canceled = result(v1.call("CancelTask", {"id": task["id"]}))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    fake_llm.release()
    wait_until(lambda: fake_llm.held == 0, timeout=10, what="the model call to end")
    # Never completed afterwards, also once the background work is over.
    from toolnexus_django.fulfilment.runs import close_runs

    assert close_runs(timeout=15)
    assert result(v1.get_v1(task["id"]))["status"]["state"] == "TASK_STATE_CANCELED"


# -- versions and method names ----------------------------------------------------------


@pytest.mark.parametrize("version", ["7.0", "2", "0.2", "0.4", "banana", "1.0-beta", "v1"])
def test_unknown_versions_are_refused_with_v1_details(
    rpc: RpcClient, configure: Any, version: str
) -> None:
    configure(None)
    for method in ("GetTask", "tasks/get", "ListTasks"):
        reply = rpc.call(method, {"id": "x"}, headers={"A2A-Version": version})
        err = error(reply, -32009)
        [info] = err["data"]
        assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
        assert info["reason"] == "VERSION_NOT_SUPPORTED"
        assert info["domain"] == "a2a-protocol.org"
        assert info["metadata"] == {"supportedVersions": "0.3,1.0"}


@pytest.mark.parametrize(
    "method", ["ListTasks", "CancelTask", "SendStreamingMessage", "SubscribeToTask"]
)
def test_v1_only_methods_named_with_version_0_3_are_refused(
    rpc: RpcClient, configure: Any, method: str
) -> None:
    """Documented: a v1.0-only method sent as ``A2A-Version: 0.3`` is -32009
    (without any version it is served as v1.0: tests/a2a/test_version_forms.py)."""
    configure(None)
    reply = rpc.call(method, {"id": "x"}, headers={"A2A-Version": "0.3"})
    err = error(reply, -32009)
    assert "A2A-Version: 1.0" in err["message"]


def test_slash_methods_with_the_v1_header_are_refused(v1: V1Client, configure: Any) -> None:
    configure(None)
    err = error(v1.call("tasks/get", {"id": "x"}), -32009)
    assert "v0.3 method" in err["message"]
    error(v1.call("NoSuchMethod", {}), -32601)


def test_v1_errors_carry_typed_details(v1: V1Client, rpc: RpcClient, configure: Any) -> None:
    configure(None)
    err = error(v1.get_v1("no-such-task"), -32001)
    assert err["data"][0]["reason"] == "TASK_NOT_FOUND"
    err = error(v1.call("GetTask", {}), -32602)
    assert err["data"][0]["reason"] == "INVALID_PARAMS"
    # The toolnexus dialect's errors are unchanged.
    plain = error(rpc.get("no-such-task"), -32001)
    assert "data" not in plain


def test_unsupported_features_answer_their_codes(
    v1: V1Client, rpc: RpcClient, configure: Any
) -> None:
    # Push notifications need a store that keeps configs; a custom one has none.
    configure(None, store="tests.stores.test_stores.DictStore")
    error(v1.call("CreateTaskPushNotificationConfig", {"taskId": "x", "url": "http://x"}), -32003)
    error(rpc.call("tasks/pushNotificationConfig/set", {"taskId": "x"}), -32003)
    error(v1.call("GetExtendedAgentCard", {}), -32004)  # the card declares none
    pushed = v1.call(
        "SendMessage",
        {
            "message": v1_message("x"),
            "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/"}},
        },
    )
    error(pushed, -32003)


# -- the toolnexus dialect is unchanged ----------------------------------------------


def test_toolnexus_dialect_returns_at_once(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(Hang(then=Text("later")))
    # No header: SendMessage is toolnexus's, and never waits, whatever it asks.
    reply = rpc.call(
        "SendMessage",
        {"message": _v03("quick"), "configuration": {"blocking": True}},
    )
    task = reply["result"]
    assert task["kind"] == "task" and task["status"]["state"] == "submitted"
    fake_llm.wait_held(1)
    fake_llm.release()
    assert rpc.wait(task["id"])["status"]["state"] == "completed"


def test_toolnexus_outbound_client_still_completes(
    live_server: Any, configure: Any, fake_llm: FakeLLM
) -> None:
    import asyncio

    configure(fake_llm, store="django")
    fake_llm.on("summarise this", Text("summarised."))
    card_url = f"{live_server.url}/agent/.well-known/agent-card.json"

    async def call() -> toolnexus.ToolResult:
        tools = await toolnexus.agent_tools(
            toolnexus.agent(card_url, timeout=20_000, poll_every=50)
        )
        tool = next(t for t in tools if t.name.endswith("_summarize"))
        return await tool.execute({"task": "summarise this"})

    outcome = asyncio.run(call())
    assert outcome.is_error is False, outcome.output
    assert outcome.output == "summarised."


# -- blocking sends (v0.3) ----------------------------------------------------------------


def _v03(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


def test_v03_send_blocks_by_default(rpc: RpcClient, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm)
    fake_llm.push(Text("blocked until done"))
    done = rpc.call("message/send", {"message": _v03("wait for it")})["result"]
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"] == [{"kind": "text", "text": "blocked until done"}]

    fake_llm.push(Text("not waited for"))
    quick = rpc.call(
        "message/send",
        {"message": _v03("do not wait"), "configuration": {"blocking": False}},
    )["result"]
    assert quick["status"]["state"] == "submitted"
    rpc.wait(quick["id"])


def test_v03_blocking_send_stops_at_input_required_and_continues(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOL_ANSWERERS=REQUESTER_APPROVES)
    fake_llm.push(EXPENSE, Text("filed after the answer"))
    waiting = rpc.call(
        "message/send",
        {
            "message": _v03("file an expense of 12.5 for a taxi"),
            "configuration": {"blocking": True},
        },
    )["result"]
    assert waiting["status"]["state"] == "input-required"
    done = rpc.call(
        "message/send",
        {
            "message": {
                **_v03("approved", taskId=waiting["id"], contextId=waiting["contextId"]),
                # The approval's schema asks for a cost center: plain text breaks it.
                "parts": [{"kind": "data", "data": {"cost_center": "travel"}}],
            }
        },
    )["result"]
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["text"] == "filed after the answer"


def test_blocking_send_gives_up_at_its_timeout(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, BLOCKING_TIMEOUT=0.5)
    fake_llm.push(Hang(then=Text("eventually")))
    t0 = time.monotonic()
    task = rpc.call("message/send", {"message": _v03("slow")})["result"]
    elapsed = time.monotonic() - t0
    assert task["status"]["state"] in ("submitted", "working")
    assert 0.4 <= elapsed < 5, elapsed
    fake_llm.wait_held(1)
    fake_llm.release()
    assert rpc.wait(task["id"])["status"]["state"] == "completed"


@pytest.mark.parametrize("agent_url", ["wsgi"], indirect=True)  # where waiting holds a thread
def test_waiting_requests_are_bounded_per_process(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, MAX_HELD_REQUESTS=1)
    fake_llm.on("first", Hang(then=Text("first done")))
    fake_llm.on("second", Text("second done"))
    outcome: dict[str, Any] = {}

    def blocking_send() -> None:
        outcome["first"] = rpc.call("message/send", {"message": _v03("first")})["result"]

    waiter = threading.Thread(target=blocking_send)
    waiter.start()
    try:
        fake_llm.wait_held(1)
        assert follow.held.count == 1
        # The one slot is taken: this blocking send returns at once instead.
        second = rpc.call("message/send", {"message": _v03("second")})["result"]
        assert second["status"]["state"] in ("submitted", "working", "completed")
        # A stream is refused outright (before any Task is made).
        refused = rpc.call("message/stream", {"message": _v03("third")})
        assert refused["error"]["code"] == -32603
        assert "busy" in refused["error"]["message"]
    finally:
        fake_llm.release()
        waiter.join(20)
    assert outcome["first"]["status"]["state"] == "completed"
    wait_until(lambda: follow.held.count == 0, timeout=5, what="the slot to be free")


# -- ListTasks ---------------------------------------------------------------------------------


def _settled_tasks(v1: V1Client, texts: list[str], **message: Any) -> list[str]:
    """One at a time, so the Tasks' last updates come in this order."""
    ids = []
    for text in texts:
        ids.append(v1.send_v1(text, **message)["id"])
        v1.wait_v1(ids[-1])
    return ids


def _list(v1: V1Client, **params: Any) -> dict[str, Any]:
    page = result(v1.call("ListTasks", params))
    strict(page, a2a_pb2.ListTasksResponse())
    return page


def test_list_tasks_pages_newest_first_while_tasks_are_added(
    v1: V1Client, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="django")
    fake_llm.default = Text("ok")
    first_five = _settled_tasks(v1, [f"task {i}" for i in range(5)])

    page1 = _list(v1, pageSize=2)
    assert page1["pageSize"] == 2 and page1["totalSize"] == 5
    assert page1["nextPageToken"]
    seen = [t["id"] for t in page1["tasks"]]

    # Three more Tasks arrive between pages: they sort before the cursor.
    added = _settled_tasks(v1, [f"new {i}" for i in range(3)])

    token = page1["nextPageToken"]
    while token:
        page = _list(v1, pageSize=2, pageToken=token)
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
    # Every original Task exactly once, newest first, none of the new ones.
    assert seen == list(reversed(first_five))
    # A fresh listing starts with the newest.
    fresh = _list(v1, pageSize=100)
    assert [t["id"] for t in fresh["tasks"]] == list(reversed(first_five + added))
    assert fresh["nextPageToken"] == "" and fresh["totalSize"] == 8


def test_list_tasks_filters_and_shapes(v1: V1Client, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm, store="django")
    fake_llm.on("expense", EXPENSE)
    fake_llm.default = Text("summary")
    context = str(uuid.uuid4())
    in_context = _settled_tasks(v1, ["one", "two"], contextId=context)
    waiting = _settled_tasks(v1, ["file an expense of 9 for a cab"])
    before = datetime.now(UTC)
    latest = _settled_tasks(v1, ["three"])

    by_context = _list(v1, contextId=context)
    assert [t["id"] for t in by_context["tasks"]] == list(reversed(in_context))
    assert all(t["contextId"] == context for t in by_context["tasks"])

    by_state = _list(v1, status="TASK_STATE_INPUT_REQUIRED")
    assert [t["id"] for t in by_state["tasks"]] == waiting
    assert _list(v1, status=6)["tasks"][0]["id"] == waiting[0]

    stamp = before.isoformat().replace("+00:00", "Z")
    recent = _list(v1, statusTimestampAfter=stamp)
    assert [t["id"] for t in recent["tasks"]] == latest

    # Artifacts only on request; historyLength honoured.
    plain = _list(v1, contextId=context)["tasks"][0]
    assert "artifacts" not in plain and len(plain["history"]) == 2
    full = _list(v1, contextId=context, includeArtifacts=True, historyLength=1)["tasks"][0]
    assert full["artifacts"][0]["parts"] == [{"text": "summary"}]
    assert [m["role"] for m in full["history"]] == ["ROLE_AGENT"]
    raw = json.dumps(_list(v1))
    assert "_private" not in raw and "transcript" not in raw

    for bad in (
        {"pageSize": 0},
        {"pageSize": 101},
        {"pageToken": "not-a-token"},
        {"status": "TASK_STATE_SLEEPING"},
        {"statusTimestampAfter": "yesterday"},
        {"historyLength": -1},
    ):
        error(v1.call("ListTasks", bad), -32602)
    assert _list(v1, pageSize=100)["pageSize"] == 100
    assert _list(v1)["pageSize"] == 50


def test_list_tasks_needs_a_queryable_store(v1: V1Client, configure: Any) -> None:
    configure(None, store="memory")
    err = error(v1.call("ListTasks", {}), -32004)
    assert "django" in err["message"]
    assert err["data"][0]["reason"] == "UNSUPPORTED_OPERATION"


# -- owners --------------------------------------------------------------------------------------


def test_owners_see_and_touch_only_their_own_tasks(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: dict[str, Any]
) -> None:
    with_auth(configure, fake_llm)
    fake_llm.on("expense", EXPENSE)
    fake_llm.default = Text("mine")
    alice = V1Client(agent_url, basic("alice"))
    bob = V1Client(agent_url, basic("bob"))
    anonymous = V1Client(agent_url)

    alices = _settled_tasks(alice, ["a1", "a2"])
    waiting = _settled_tasks(alice, ["file an expense of 5 for a bus"])
    bobs = _settled_tasks(bob, ["b1"])

    assert [t["id"] for t in _list(alice)["tasks"]] == list(reversed(alices + waiting))
    assert [t["id"] for t in _list(bob)["tasks"]] == bobs
    assert _list(anonymous)["tasks"] == []
    assert _list(anonymous)["totalSize"] == 0

    for other in (bob, anonymous):
        error(other.get_v1(alices[0]), -32001)
        error(other.call("CancelTask", {"id": waiting[0]}), -32001)
        error(other.call("SubscribeToTask", {"id": waiting[0]}), -32001)
        error(other.call("SendMessage", {"message": v1_message("hi", taskId=waiting[0])}), -32001)
    assert result(alice.get_v1(waiting[0]))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    canceled = result(alice.call("CancelTask", {"id": waiting[0]}))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"


def test_list_page_token_is_opaque_but_stable(
    v1: V1Client, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="django")
    fake_llm.default = Text("ok")
    _settled_tasks(v1, ["x", "y", "z"])
    page = _list(v1, pageSize=1)
    token = page["nextPageToken"]
    # The same token gives the same page, however often it is used.
    assert _list(v1, pageSize=1, pageToken=token) == _list(v1, pageSize=1, pageToken=token)
    # A cursor older than every row is simply an empty last page.
    future = datetime.now(UTC) - timedelta(days=3650)
    from toolnexus_django.a2a.listing import Cursor

    empty = _list(v1, pageToken=Cursor(future, "a").encode())
    assert empty["tasks"] == [] and empty["nextPageToken"] == ""
