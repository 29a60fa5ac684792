"""ContentTypeNotSupportedError (A2A v1.0 §3.1.1, §5.4): a message part whose
media type the agent does not accept refuses the whole message — -32005 on
JSON-RPC (v1.0 and v0.3), HTTP 400 ``CONTENT_TYPE_NOT_SUPPORTED`` on HTTP+JSON
— and nothing is created: no Task, no dropped part. The accepted types are
``toolnexus_django.lifecycle.public.MEDIA_TYPES`` (text/plain for the
run, application/json for answers)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.a2a.test_rest_binding import reason, rest
from tests.conftest import RpcClient, http
from tests.fakes import FakeLLM, Text
from tests.utils import REQUESTER_APPROVES, suspend
from toolnexus_django.a2a.jsonrpc import RpcError
from toolnexus_django.a2a.mediatypes import check_media_types
from toolnexus_django.lifecycle.public import MEDIA_TYPES
from toolnexus_django.models import TaskRecord

V1 = {"A2A-Version": "1.0"}
IMAGE = {"raw": "iVBORw0KGgo=", "mediaType": "image/png", "filename": "cat.png"}


def v1_message(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": list(parts), **fields}


def v03_message(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": list(parts),
        **fields,
    }


def refused_on_json_rpc(reply: dict[str, Any], media_type: str, index: int) -> None:
    error = reply["error"]
    assert error["code"] == -32005, reply
    assert f"parts[{index}] is {media_type}" in error["message"]
    assert "text/plain" in error["message"]  # what it accepts


@pytest.mark.parametrize(
    "parts",
    [
        pytest.param([IMAGE], id="only-an-image"),
        pytest.param([{"text": "describe this"}, IMAGE], id="text-and-an-image"),
        pytest.param([{"text": "hi", "mediaType": "text/html"}], id="text-stated-html"),
        pytest.param([{"text": "hi"}, {"url": "https://example.com/a.bin"}], id="untyped-file"),
    ],
)
def test_an_unsupported_part_refuses_the_v1_send_and_creates_nothing(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, parts: list[dict[str, Any]]
) -> None:
    configure(fake_llm)
    before = TaskRecord.objects.count()
    for method in ("SendMessage", "SendStreamingMessage"):
        reply = rpc.call(method, {"message": v1_message(*parts)}, headers=V1)
        error = reply["error"]
        assert error["code"] == -32005, reply
        (info,) = error["data"]
        assert info["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
        assert info["metadata"]["supported"] == ",".join(MEDIA_TYPES)
    assert TaskRecord.objects.count() == before
    assert fake_llm.requests == []


def test_the_error_names_the_part_and_its_type(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    reply = rpc.call("SendMessage", {"message": v1_message({"text": "a"}, IMAGE)}, headers=V1)
    refused_on_json_rpc(reply, "image/png", 1)
    assert reply["error"]["data"][0]["metadata"]["field"] == "params.message.parts[1]"


def test_v03_file_parts_are_judged_by_their_mime_type(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    before = TaskRecord.objects.count()
    pdf = {"kind": "file", "file": {"uri": "https://h/a.pdf", "mimeType": "application/pdf"}}
    text = {"kind": "text", "text": "read the attachment"}
    for method in ("message/send", "message/stream"):
        reply = rpc.call(method, {"message": v03_message(text, pdf)})
        refused_on_json_rpc(reply, "application/pdf", 1)
        assert reply["error"]["data"]["mediaType"] == "application/pdf"  # v0.3: data as it is
    assert TaskRecord.objects.count() == before


def test_http_json_answers_400_content_type_not_supported(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    before = TaskRecord.objects.count()
    for route in ("message:send", "message:stream"):
        refused = rest(agent_url, "POST", route, {"message": v1_message({"text": "x"}, IMAGE)})
        assert refused.status == 400, refused.body
        assert refused.json["error"]["status"] == "INVALID_ARGUMENT"
        assert reason(refused) == "CONTENT_TYPE_NOT_SUPPORTED"
    assert TaskRecord.objects.count() == before


def test_accepted_types_pass_whatever_their_parameters_or_case(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.on("plain words", Text("read them"))
    parts = [
        {"text": "plain words", "mediaType": "Text/Plain; charset=utf-8"},
        {"data": {"size": 3}, "mediaType": "application/json"},
    ]
    sent = rpc.call("SendMessage", {"message": v1_message(*parts)}, headers=V1)
    task = sent["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "read them"}]
    # Nothing was dropped on the way in: both parts are the Task's first message.
    assert [sorted(p) for p in task["history"][0]["parts"]] == [["text"], ["data"]]


def test_an_answer_with_an_unsupported_part_is_refused_and_the_task_keeps_waiting(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOL_ANSWERERS=REQUESTER_APPROVES)
    waiting = suspend(rpc, fake_llm, then="filed")
    answer = v1_message(
        {"data": {"cost_center": "travel"}},
        {"url": "https://example.com/receipt.jpg", "mediaType": "image/jpeg"},
        taskId=waiting["id"],
    )
    reply = rpc.call("SendMessage", {"message": answer}, headers=V1)
    refused_on_json_rpc(reply, "image/jpeg", 1)
    assert rpc.get(waiting["id"])["result"]["status"]["state"] == "input-required"


def test_a_media_type_that_is_not_a_string_is_invalid_params() -> None:
    with pytest.raises(RpcError) as refused:
        check_media_types([{"text": "x", "mediaType": 7}])
    assert refused.value.code == -32602
    assert refused.value.data == {"field": "params.message.parts[0].mediaType"}


def test_accepted_output_modes_are_a_hint_not_a_refusal(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    """The spec asks an agent to tailor its output to them (a SHOULD); this
    agent's output is text/plain whatever they say. Only their shape is checked."""
    configure(fake_llm)
    fake_llm.on("any output", Text("plain text"))
    send = {"message": v1_message({"text": "any output"})}
    asked = rpc.call(
        "SendMessage", {**send, "configuration": {"acceptedOutputModes": ["image/png"]}}, headers=V1
    )
    assert asked["result"]["task"]["artifacts"][0]["parts"] == [{"text": "plain text"}]
    bad = rpc.call(
        "message/send",
        {
            "message": v03_message({"kind": "text", "text": "x"}),
            "configuration": {"acceptedOutputModes": "text/plain"},
        },
    )
    assert bad["error"]["code"] == -32602
    assert "acceptedOutputModes must be a list" in bad["error"]["message"]


def test_the_card_declares_exactly_what_a_send_accepts(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    card = http(agent_url + ".well-known/agent-card.json").json
    rpc = RpcClient(agent_url, V1)
    for mode in card["defaultInputModes"]:
        sent = rpc.call(
            "SendMessage",
            {
                "message": v1_message({"text": "hi", "mediaType": mode}),
                "configuration": {"returnImmediately": True},
            },
        )
        assert "task" in sent["result"], (mode, sent)
    refused = rpc.call("SendMessage", {"message": v1_message({"text": "a"}, IMAGE)})
    assert refused["error"]["data"][0]["metadata"]["supported"] == ",".join(
        card["defaultInputModes"]
    )
