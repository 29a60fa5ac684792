"""A message's ``messageId``, ``role`` and ``parts`` (at least one) are
required (A2A v1.0 §5.7 and §3.3.2; the v0.3 schema): a send, a stream or an
answer to a waiting Task without one is -32602 (HTTP+JSON: 400
``INVALID_ARGUMENT``) naming the field, and nothing is created — none is
invented. protobuf's JSON mapping writes an unset field as its zero value, so
``""``, ``ROLE_UNSPECIFIED`` and ``[]`` are missing too. The toolnexus dialect
(SPEC §7B, no ``A2A-Version``) needs neither id nor role."""

from __future__ import annotations

from typing import Any

import pytest

from tests.a2a.test_rest_binding import reason, rest
from tests.conftest import RpcClient
from tests.fakes import FakeLLM
from tests.utils import REQUESTER_APPROVES, suspend
from toolnexus_django.models import TaskRecord

V1 = {"A2A-Version": "1.0"}
V1_MESSAGE = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
V03_MESSAGE = {
    "kind": "message",
    "messageId": "m-1",
    "role": "user",
    "parts": [{"kind": "text", "text": "hello"}],
}

#: (what is wrong, the message's fields changed, the field the error names)
MISSING = [
    ("no messageId", {"messageId": None}, "messageId"),
    ("empty messageId", {"messageId": ""}, "messageId"),
    ("no role", {"role": None}, "role"),
    ("unset role", {"role": "ROLE_UNSPECIFIED"}, "role"),
    ("role as a number 0", {"role": 0}, "role"),
    ("no parts", {"parts": None}, "parts"),
    ("no part", {"parts": []}, "parts"),
]


def without(message: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = {**message, **changes}
    return {k: v for k, v in out.items() if v is not None}


def names_the_field(error: dict[str, Any], field: str) -> None:
    assert error["code"] == -32602, error
    assert f"params.message.{field} is required" in error["message"]


@pytest.mark.parametrize(("case", "changes", "field"), MISSING, ids=[m[0] for m in MISSING])
def test_v1_json_rpc_refuses_a_message_without_it(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, case: str, changes: Any, field: str
) -> None:
    configure(fake_llm)
    before = TaskRecord.objects.count()
    for method in ("SendMessage", "SendStreamingMessage"):
        reply = rpc.call(method, {"message": without(V1_MESSAGE, changes)}, headers=V1)
        names_the_field(reply["error"], field)
        (info,) = reply["error"]["data"]
        assert info["reason"] == "INVALID_PARAMS"
        assert info["metadata"]["field"] == f"params.message.{field}"
    assert TaskRecord.objects.count() == before


@pytest.mark.parametrize("missing", ["messageId", "role", "parts"])
def test_v03_refuses_a_message_without_it(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, missing: str
) -> None:
    configure(fake_llm)
    before = TaskRecord.objects.count()
    for method in ("message/send", "message/stream"):
        reply = rpc.call(method, {"message": without(V03_MESSAGE, {missing: None})})
        names_the_field(reply["error"], missing)
        assert reply["error"]["data"] == {"field": f"params.message.{missing}"}
    assert TaskRecord.objects.count() == before


@pytest.mark.parametrize(("missing", "field"), [("messageId", "messageId"), ("role", "role")])
def test_http_json_answers_400_naming_the_field(
    agent_url: str, configure: Any, fake_llm: FakeLLM, missing: str, field: str
) -> None:
    configure(fake_llm)
    before = TaskRecord.objects.count()
    for route in ("message:send", "message:stream"):
        refused = rest(agent_url, "POST", route, {"message": without(V1_MESSAGE, {missing: None})})
        assert (refused.status, reason(refused)) == (400, "INVALID_PARAMS")
        assert refused.json["error"]["status"] == "INVALID_ARGUMENT"
        assert f"params.message.{field} is required" in refused.json["error"]["message"]
    assert TaskRecord.objects.count() == before


def test_a_role_of_the_other_version_is_refused(rpc: RpcClient, configure: Any) -> None:
    configure(None)
    v1 = rpc.call("SendMessage", {"message": {**V1_MESSAGE, "role": "user"}}, headers=V1)
    assert v1["error"]["code"] == -32602
    assert "role must be ROLE_USER or ROLE_AGENT" in v1["error"]["message"]
    v03 = rpc.call("message/send", {"message": {**V03_MESSAGE, "role": "ROLE_USER"}})
    assert "role must be user or agent" in v03["error"]["message"]


def test_an_answer_without_a_message_id_is_refused_and_the_task_keeps_waiting(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOL_ANSWERERS=REQUESTER_APPROVES)
    waiting = suspend(rpc, fake_llm, then="filed")
    answer = {
        "role": "ROLE_USER",
        "taskId": waiting["id"],
        "parts": [{"data": {"cost_center": "travel"}}],
    }
    reply = rpc.call("SendMessage", {"message": answer}, headers=V1)
    names_the_field(reply["error"], "messageId")
    assert rpc.get(waiting["id"])["result"]["status"]["state"] == "input-required"
    # The same answer with its id continues the Task.
    answered = rpc.call("SendMessage", {"message": {**answer, "messageId": "a-1"}}, headers=V1)
    assert answered["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_the_toolnexus_dialect_needs_neither(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    """toolnexus's SPEC §7B makes both optional (its own server reads only
    the parts): a SendMessage without A2A-Version keeps working."""
    configure(fake_llm)
    reply = rpc.call("SendMessage", {"message": {"parts": [{"kind": "text", "text": "hi"}]}})
    assert reply["result"]["status"]["state"] == "submitted"
    assert reply["result"]["history"][0]["role"] == "user"
