"""Proto field names (A2A v1.0 §5.5): v1.0's JSON is protobuf's JSON mapping,
whose parsers take a field by its lowerCamelCase name and by its proto name.
Every v1.0 request — JSON-RPC params, HTTP+JSON bodies and query strings,
nested messages, parts and push configs — may use either: a snake_case
conversation and a camelCase one make identical Tasks and get identical
answers. An object naming one field both ways is -32602. v0.3 is JSON-schema
based: only its camelCase names count there."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from a2a.types import a2a_pb2
from google.protobuf.descriptor import Descriptor

from tests.a2a.test_rest_binding import reason, rest
from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text, ToolCall
from tests.utils import EXPENSE_TEXT, REQUESTER_APPROVES
from toolnexus_django.a2a.jsonrpc import RpcError
from toolnexus_django.a2a.protojson import REQUESTS, Shape, json_names

V1 = {"A2A-Version": "1.0"}
EXPENSE = ToolCall("file_expense", {"amount": 12.5, "description": "taxi"})
PUSH = {"ALLOWED_HOSTS": ["127.0.0.1"]}
#: Free-form JSON: the client's own keys, never renamed.
FREE_FORM = ("metadata", "data")


def snake(value: Any) -> Any:
    """``value`` with every field name in its proto spelling (``messageId`` ->
    ``message_id``), the free-form values left as they are."""
    if isinstance(value, list):
        return [snake(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {
        re.sub(r"([A-Z])", lambda m: "_" + m[1].lower(), key): (
            item if key in FREE_FORM else snake(item)
        )
        for key, item in value.items()
    }


def scrubbed(value: Any, tag: str) -> Any:
    """An answer with what differs between two runs by design — ids the
    server made, moments, the run's own tag — replaced by placeholders."""
    text = re.sub(r"[0-9a-f]{8}(-?[0-9a-f]{4}){3}-?[0-9a-f]{12}", "<id>", value)  # uuids
    text = re.sub(r"\d{4}-\d\d-\d\dT[0-9:.]+Z", "<moment>", text)
    return text.replace(tag, "<tag>")


# -- every field of every request, by the SDK's own descriptors ----------------------------

#: Each operation's request message in the official SDK's generated types.
SDK_REQUESTS = {
    "send": a2a_pb2.SendMessageRequest,
    "stream": a2a_pb2.SendMessageRequest,
    "get": a2a_pb2.GetTaskRequest,
    "list": a2a_pb2.ListTasksRequest,
    "cancel": a2a_pb2.CancelTaskRequest,
    "subscribe": a2a_pb2.SubscribeToTaskRequest,
    "push-set": a2a_pb2.TaskPushNotificationConfig,
    "push-get": a2a_pb2.GetTaskPushNotificationConfigRequest,
    "push-list": a2a_pb2.ListTaskPushNotificationConfigsRequest,
    "push-delete": a2a_pb2.DeleteTaskPushNotificationConfigRequest,
    "extended-card": a2a_pb2.GetExtendedAgentCardRequest,
}


def differences(shape: Shape, message: Descriptor, where: str) -> list[str]:
    found = []
    renames = {f.name: f.json_name for f in message.fields if f.name != f.json_name}
    if shape.renames != renames:
        found.append(f"{where}: renames {shape.renames} != {renames}")
    nested = {
        f.json_name: f.message_type
        for f in message.fields
        if f.message_type is not None and not f.message_type.full_name.startswith("google.")
    }
    if set(shape.nested) != set(nested):
        found.append(f"{where}: nested {sorted(shape.nested)} != {sorted(nested)}")
    for name, inner in nested.items():
        if name in shape.nested:
            found += differences(shape.nested[name], inner, f"{where}.{name}")
    return found


def test_every_field_of_every_v1_request_is_read_by_both_names() -> None:
    assert set(REQUESTS) == set(SDK_REQUESTS)
    found = [
        problem
        for operation, message in SDK_REQUESTS.items()
        for problem in differences(REQUESTS[operation], message.DESCRIPTOR, operation)
    ]
    assert found == []


def test_proto_names_are_read_and_free_form_values_keep_their_keys() -> None:
    params = {
        "message": {
            "message_id": "m",
            "role": "ROLE_USER",
            "parts": [{"text": "x", "media_type": "text/plain", "metadata": {"a_b": 1}}],
            "metadata": {"client_ref": {"x_y": 2}},
            "reference_task_ids": ["t"],
        },
        "configuration": {
            "return_immediately": True,
            "task_push_notification_config": {"task_id": "", "url": "https://h/"},
        },
    }
    assert json_names("send", params) == {
        "message": {
            "messageId": "m",
            "role": "ROLE_USER",
            "parts": [{"text": "x", "mediaType": "text/plain", "metadata": {"a_b": 1}}],
            "metadata": {"client_ref": {"x_y": 2}},
            "referenceTaskIds": ["t"],
        },
        "configuration": {
            "returnImmediately": True,
            "taskPushNotificationConfig": {"taskId": "", "url": "https://h/"},
        },
    }
    assert params["message"]["message_id"] == "m"  # the caller's params are not changed


def test_a_camel_case_request_is_read_as_it_is() -> None:
    params = {
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
        "configuration": {"returnImmediately": True},
    }
    assert json_names("send", params) is params  # nothing copied, nothing renamed


def test_one_field_named_both_ways_is_invalid_params() -> None:
    with pytest.raises(RpcError) as refused:
        json_names("send", {"message": {"messageId": "a", "message_id": "b"}})
    assert refused.value.code == -32602
    assert "params.message names messageId twice" in refused.value.message
    with pytest.raises(RpcError):
        json_names("list", {"pageSize": 1, "page_size": 2})


# -- end to end: the same conversation in both spellings -----------------------------------


def conversation_over_json_rpc(
    rpc: RpcClient, fake: FakeLLM, tag: str, spell: Any
) -> list[dict[str, Any]]:
    """A waiting expense, answered; read, listed; a push config round trip.
    Every request spelled by ``spell``; the answers, scrubbed."""
    fake.push(EXPENSE, Text("filed"))
    answers: list[Any] = []

    def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        reply = rpc.call(method, spell(params), headers=V1)
        answers.append(reply)
        assert "result" in reply, reply
        return dict(reply["result"])

    context = f"ctx-{tag}"
    waiting = call(
        "SendMessage",
        {
            "message": {
                "messageId": f"{tag}-1",
                "contextId": context,
                "role": "ROLE_USER",
                "parts": [
                    {"text": EXPENSE_TEXT, "mediaType": "text/plain", "metadata": {"client_ref": 1}}
                ],
                "metadata": {"client_ref": "r_1"},
            },
            "configuration": {"historyLength": 5, "acceptedOutputModes": ["text/plain"]},
        },
    )["task"]
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    task_id = waiting["id"]
    done = call(
        "SendMessage",
        {
            "message": {
                "messageId": f"{tag}-2",
                "taskId": task_id,
                "contextId": context,
                "role": "ROLE_USER",
                "parts": [{"data": {"cost_center": "travel"}}],
                "referenceTaskIds": [task_id],
            },
            "configuration": {"returnImmediately": False},
        },
    )["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    call("GetTask", {"id": task_id, "historyLength": 1})
    listed = call(
        "ListTasks",
        {
            "contextId": context,
            "pageSize": 1,
            "includeArtifacts": True,
            "statusTimestampAfter": "2000-01-01T00:00:00Z",
        },
    )
    assert [t["id"] for t in listed["tasks"]] == [task_id]
    config = {"taskId": task_id, "id": f"{tag}-c", "url": "http://127.0.0.1:9/h", "token": "t"}
    call("CreateTaskPushNotificationConfig", config)
    call("GetTaskPushNotificationConfig", {"taskId": task_id, "id": f"{tag}-c"})
    call("ListTaskPushNotificationConfigs", {"taskId": task_id})
    call("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": f"{tag}-c"})
    return [scrubbed(rpc_json(a), tag) for a in answers]


def rpc_json(reply: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in reply.items() if k != "id"}, sort_keys=True)


def test_snake_and_camel_case_conversations_are_the_same_over_json_rpc(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOL_ANSWERERS=REQUESTER_APPROVES, PUSH=PUSH)
    camel = conversation_over_json_rpc(rpc, fake_llm, "camel", lambda p: p)
    proto = conversation_over_json_rpc(rpc, fake_llm, "snake", snake)
    assert proto == camel
    assert '"metadata": {"client_ref": 1}' in camel[0]  # a part's metadata kept its keys


def test_snake_and_camel_case_are_the_same_over_http_json(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.default = Text("a summary")

    def conversation(tag: str, spell: Any, query: dict[str, str]) -> list[str]:
        sent = rest(
            agent_url,
            "POST",
            "message:send",
            spell(
                {
                    "message": {
                        "messageId": f"{tag}-1",
                        "contextId": f"ctx-{tag}",
                        "role": "ROLE_USER",
                        "parts": [{"text": "summarise this", "mediaType": "text/plain"}],
                    },
                    "configuration": {"historyLength": 1},
                }
            ),
        )
        task_id = sent.json["task"]["id"]
        got = rest(agent_url, "GET", f"tasks/{task_id}?{query['get']}")
        listed = rest(agent_url, "GET", f"tasks?{query['list'].format(ctx=f'ctx-{tag}')}")
        replies = [sent, got, listed]
        assert all(r.status == 200 for r in replies), [r.body[:300] for r in replies]
        assert [t["id"] for t in listed.json["tasks"]] == [task_id]
        return [scrubbed(r.body.decode(), tag) for r in replies]

    camel = conversation(
        "camel",
        lambda p: p,
        {"get": "historyLength=1", "list": "contextId={ctx}&pageSize=1&includeArtifacts=true"},
    )
    proto = conversation(
        "snake",
        snake,
        {"get": "history_length=1", "list": "context_id={ctx}&page_size=1&include_artifacts=true"},
    )
    assert proto == camel
    assert '"history":[' in camel[1] and '"artifacts":[' in camel[2]  # both read as asked


def test_a_push_config_in_proto_names_is_created_over_http_json(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    """The body of ``POST tasks/{id}/pushNotificationConfigs`` is the config;
    its ``task_id`` (as the SDK's and the TCK's clients send it) is the path's."""
    configure(fake_llm, PUSH=PUSH)
    fake_llm.default = Text("done")
    message = {"message_id": "p-1", "role": "ROLE_USER", "parts": [{"text": "x"}]}
    task_id = rest(agent_url, "POST", "message:send", {"message": message}).json["task"]["id"]
    config = {"task_id": task_id, "id": "c1", "url": "http://127.0.0.1:9/h"}
    made = rest(agent_url, "POST", f"tasks/{task_id}/pushNotificationConfigs", config)
    assert made.status == 200, made.body
    assert made.json == {"taskId": task_id, "id": "c1", "url": "http://127.0.0.1:9/h"}


def test_both_names_at_once_are_refused_on_every_binding(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    rpc = RpcClient(agent_url, V1)
    message = {"messageId": "a", "message_id": "b", "role": "ROLE_USER", "parts": [{"text": "x"}]}
    reply = rpc.call("SendMessage", {"message": message})
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"][0]["metadata"]["field"] == "params.message.messageId"
    refused = rest(agent_url, "GET", "tasks?pageSize=1&page_size=2")
    assert (refused.status, reason(refused)) == (400, "INVALID_PARAMS")


def test_v03_reads_its_camel_case_names_only(rpc: RpcClient, configure: Any) -> None:
    configure(None)
    message = {"kind": "message", "message_id": "m", "role": "user", "parts": []}
    reply = rpc.call("message/send", {"message": message})
    assert reply["error"]["code"] == -32602
    assert "params.message.messageId is required" in reply["error"]["message"]
