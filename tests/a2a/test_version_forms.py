"""The forms a client may name its A2A version in: the ``A2A-Version``
header, the query parameter of the same name, or nothing at all for the
v1.0-only method names; and A2A v1.0.1's ``application/a2a+json``."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.conftest import RpcClient, http

V1_ONLY = ["ListTasks", "CancelTask", "GetExtendedAgentCard", "GetTaskPushNotificationConfig"]


def v1_task_id(rpc: RpcClient, fake: Any) -> str:
    reply = rpc.call(
        "SendMessage",
        {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
        headers={"A2A-Version": "1.0"},
    )
    return str(reply["result"]["task"]["id"])


@pytest.mark.parametrize("method", V1_ONLY)
def test_v1_only_names_without_any_version_are_served_as_v1(
    rpc: RpcClient, configure: Any, method: str
) -> None:
    configure(None)
    reply = rpc.call(method, {"id": "no-such-task"})
    if method == "ListTasks":
        assert reply["result"]["tasks"] == [] and "nextPageToken" in reply["result"]
        return
    # Their own v1.0 errors, with v1.0's typed details: not -32009.
    assert reply["error"]["code"] != -32009, reply
    assert reply["error"]["data"][0]["@type"].endswith("ErrorInfo")


def test_send_message_and_get_task_without_a_version_stay_the_toolnexus_dialect(
    rpc: RpcClient, configure: Any, fake_llm: Any
) -> None:
    configure(fake_llm)
    task = rpc.send("hello")
    assert task["status"]["state"] in ("submitted", "working", "completed")  # not TASK_STATE_*
    assert "kind" in task


def test_the_version_may_come_as_a_query_parameter(
    agent_url: str, configure: Any, fake_llm: Any
) -> None:
    configure(fake_llm)
    query = RpcClient(f"{agent_url}?A2A-Version=1.0")
    task_id = v1_task_id(query, fake_llm)
    got = query.call("GetTask", {"id": task_id})["result"]
    assert got["status"]["state"].startswith("TASK_STATE_")  # v1.0 rendering
    # An unknown version there is refused as in the header.
    bad = RpcClient(f"{agent_url}?A2A-Version=7.0").call("GetTask", {"id": task_id})
    assert bad["error"]["code"] == -32009
    # The header wins over the query parameter.
    both = RpcClient(f"{agent_url}?A2A-Version=7.0", {"A2A-Version": "1.0"})
    assert both.call("GetTask", {"id": task_id})["result"]["id"] == task_id


def test_application_a2a_json_is_accepted_and_answered(
    agent_url: str, configure: Any, fake_llm: Any
) -> None:
    configure(fake_llm)
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m-2", "role": "ROLE_USER", "parts": [{"text": "x"}]}},
    }
    reply = http(
        agent_url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/a2a+json", "A2A-Version": "1.0"},
    )
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("application/")
    assert reply.json["id"] == 7
    assert reply.json["result"]["task"]["status"]["state"].startswith("TASK_STATE_")


def curl_json(*args: str) -> Any:
    out = subprocess.run(
        ["curl", "-s", "--max-time", "10", *args],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    ).stdout
    return json.loads(out)


def test_the_forms_with_curl(agent_url: str, configure: Any, fake_llm: Any) -> None:
    configure(fake_llm)
    send = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m-c", "role": "ROLE_USER", "parts": [{"text": "x"}]}},
    }
    # The version as a query parameter, the body as application/a2a+json.
    sent = curl_json(
        f"{agent_url}?A2A-Version=1.0",
        "-H",
        "Content-Type: application/a2a+json",
        "-d",
        json.dumps(send),
    )
    task_id = sent["result"]["task"]["id"]
    assert sent["result"]["task"]["status"]["state"].startswith("TASK_STATE_")
    # A v1.0-only name with no version at all.
    listed = curl_json(
        agent_url,
        "-H",
        "Content-Type: application/json",
        "-d",
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}}),
    )
    assert task_id in [t["id"] for t in listed["result"]["tasks"]]
