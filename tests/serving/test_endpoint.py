"""The JSON-RPC endpoint over real HTTP: bad input, ownership, what stays private."""

from __future__ import annotations

import json
from typing import Any

import pytest

from testproject.demo import APPROVAL_SCHEMA
from tests.conftest import RpcClient, basic, http
from tests.fakes import FakeLLM, Text

pytestmark = pytest.mark.django_db(transaction=True)


def error_of(reply: Any) -> dict[str, Any]:
    assert reply.status == 200, (reply.status, reply.body[:300])
    assert reply.headers["content-type"].startswith("application/json"), reply.headers
    body = reply.json
    assert body["jsonrpc"] == "2.0"
    assert "result" not in body
    return body


@pytest.mark.parametrize(
    ("body", "code", "echoed_id"),
    [
        (b"this is not json", -32700, None),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask"', -32700, None),
        (b"\xff\xfe\x00garbage", -32700, None),
        (b"[]", -32600, None),
        (b'[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]', -32600, None),
        (b"42", -32600, None),
        (b'"a string"', -32600, None),
        (b"null", -32600, None),
        (b'{"jsonrpc": "2.0", "id": 7}', -32600, 7),
        (b'{"jsonrpc": "2.0", "id": "abc", "method": ""}', -32600, "abc"),
        (b'{"jsonrpc": "2.0", "id": 8, "method": 12}', -32600, 8),
        (b'{"id": 9, "method": "GetTask", "params": {"id": "x"}}', -32600, 9),
        (b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "GetTask"}', -32600, None),
        (b'{"jsonrpc": "2.0", "id": 10, "method": "tasks/explode", "params": {}}', -32601, 10),
        (b'{"jsonrpc": "2.0", "id": 11, "method": "GetTask"}', -32602, 11),
        (b'{"jsonrpc": "2.0", "id": 12, "method": "GetTask", "params": {}}', -32602, 12),
        (b'{"jsonrpc": "2.0", "id": 13, "method": "GetTask", "params": {"id": 5}}', -32602, 13),
        (b'{"jsonrpc": "2.0", "id": 14, "method": "GetTask", "params": "x"}', -32602, 14),
        (b'{"jsonrpc": "2.0", "id": 15, "method": "SendMessage"}', -32602, 15),
        (
            b'{"jsonrpc": "2.0", "id": 16, "method": "SendMessage", "params": {"message": 1}}',
            -32602,
            16,
        ),
        (
            b'{"jsonrpc":"2.0","id":17,"method":"message/send",'
            b'"params":{"message":{"role":"user","parts":[]}}}',
            -32602,
            17,
        ),
        (
            b'{"jsonrpc":"2.0","id":18,"method":"SendMessage",'
            b'"params":{"message":{"role":"user","parts":[{"kind":"data","data":{}}]}}}',
            -32602,
            18,
        ),
        (
            b'{"jsonrpc":"2.0","id":19,"method":"GetTask","params":{"id":"no-such-task"}}',
            -32001,
            19,
        ),
        (
            b'{"jsonrpc":"2.0","id":"s","method":"tasks/get","params":{"id":"../../etc/passwd"}}',
            -32001,
            "s",
        ),
        (b'{"jsonrpc":"2.0","id":20,"method":"GetTask","params":{"id":"a\\u0000b"}}', -32602, 20),
    ],
)
def test_bad_input_is_a_jsonrpc_error_never_an_html_500(
    rpc: RpcClient, configure: Any, body: bytes, code: int, echoed_id: Any
) -> None:
    configure(None)
    reply = error_of(rpc.raw(body))
    assert reply["error"]["code"] == code, reply
    assert isinstance(reply["error"]["message"], str) and reply["error"]["message"]
    assert reply["id"] == echoed_id


def test_a_very_long_task_id_is_invalid_params_with_a_short_message(
    rpc: RpcClient, configure: Any
) -> None:
    configure(None)
    reply = rpc.call("GetTask", {"id": "x" * 100_000})
    assert reply["error"]["code"] == -32602
    assert len(reply["error"]["message"]) < 200


def test_the_server_keeps_serving_after_bad_input(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.default = Text("still here")
    for body in (b"{", b"[]", b"1", b'{"jsonrpc":"2.0","id":1,"method":"x"}'):
        assert "error" in rpc.raw(body).json
    task = rpc.send("hello")
    assert rpc.wait(task["id"])["status"]["state"] == "completed"


def test_unknown_a2a_version_is_refused(rpc: RpcClient, configure: Any) -> None:
    configure(None)
    reply = rpc.call("tasks/get", {"id": "x"}, headers={"A2A-Version": "7.0"})
    assert reply["error"]["code"] == -32009
    assert reply["error"]["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    assert reply["error"]["data"][0]["metadata"]["supportedVersions"] == "0.3,1.0"
    # The official v0.3 client sends this header: accepted.
    ok = rpc.call("tasks/get", {"id": "x"}, headers={"A2A-Version": "0.3"})
    assert ok["error"]["code"] == -32001


def test_message_to_an_unknown_task_is_not_a_new_task(rpc: RpcClient, configure: Any) -> None:
    configure(None)
    reply = rpc.call(
        "SendMessage",
        {"message": {"role": "user", "taskId": "t-1", "parts": [{"kind": "text", "text": "hi"}]}},
    )
    assert reply["error"]["code"] == -32001


def test_get_on_the_card_url_and_wrong_methods(live_server: Any, configure: Any) -> None:
    configure(None)
    card = http(f"{live_server.url}/agent/.well-known/agent-card.json")
    assert card.status == 200
    assert card.json["url"] == f"{live_server.url}/agent/"
    # GET on the JSON-RPC endpoint is not an HTML page either.
    reply = http(f"{live_server.url}/agent/")
    assert reply.status == 405
    assert reply.headers["content-type"].startswith("application/json")


# -- ownership and privacy ----------------------------------------------------------


def test_the_owner_is_recorded_and_others_cannot_read_the_task(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: dict[str, Any]
) -> None:
    from toolnexus_django.models import TaskRecord

    configure(
        fake_llm,
        AUTHENTICATION_CLASSES=["rest_framework.authentication.BasicAuthentication"],
        PERMISSION_CLASSES=["rest_framework.permissions.AllowAny"],
    )
    fake_llm.default = Text("for alice only")
    alice = RpcClient(agent_url, basic("alice", "alice-pw"))
    bob = RpcClient(agent_url, basic("bob", "bob-pw"))
    anonymous = RpcClient(agent_url)

    task = alice.send("mine")
    done = alice.wait(task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "for alice only"
    assert TaskRecord.objects.get(pk=task["id"]).owner == users["alice"]

    for other in (bob, anonymous):
        reply = other.get(task["id"])
        assert reply["error"]["code"] == -32001
        assert reply["error"]["message"] == f"Task not found: {task['id']}"


def test_authentication_can_be_required(
    agent_url: str, configure: Any, users: dict[str, Any]
) -> None:
    configure(
        None,
        AUTHENTICATION_CLASSES=["rest_framework.authentication.BasicAuthentication"],
        PERMISSION_CLASSES=["rest_framework.permissions.IsAuthenticated"],
    )
    denied = RpcClient(agent_url).raw(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}})
    )
    assert denied.status in (401, 403)
    assert denied.headers["content-type"].startswith("application/json")
    allowed = RpcClient(agent_url, basic("bob", "bob-pw")).get("x")
    assert allowed["error"]["code"] == -32001


#: Never on the wire. (The Request's schema is public: the requester must
#: see what an answer has to look like — see the request part below.)
PRIVATE_MARKERS = ("_private", "owner", "transcript", "pending", "approve-", '"tool"', "12.5,")


def test_nothing_private_reaches_the_wire(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, users: dict[str, Any]
) -> None:
    from tests.fakes import ToolCall

    configure(fake_llm)
    fake_llm.push(ToolCall("file_expense", {"amount": 12.5, "description": "taxi"}))
    submitted = rpc.send("file an expense of 12.5 for a taxi")
    suspended = rpc.wait(submitted["id"])
    assert suspended["status"]["state"] == "input-required"
    for shown in (submitted, suspended):
        raw = json.dumps(shown)
        for marker in PRIVATE_MARKERS:
            assert marker not in raw, (marker, raw)
        assert set(shown) <= {
            "id",
            "contextId",
            "kind",
            "status",
            "artifacts",
            "history",
            "metadata",
        }
    # What the requester may know of the Request: kind, who answers, the schema.
    [request] = [
        p["data"]["request"] for p in suspended["status"]["message"]["parts"] if p["kind"] == "data"
    ]
    assert request == {
        "kind": "approval",
        "answeredBy": ["reviewer"],
        "schema": APPROVAL_SCHEMA,
    }


def test_a_message_with_a_nul_character_is_served(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="django")
    fake_llm.default = Text("seen")
    task = rpc.send("before\x00after")
    done = rpc.wait(task["id"])
    assert done["status"]["state"] == "completed"
    assert done["history"][0]["parts"][0]["text"] == "before\ufffdafter"
