"""What a Task and a conversation store is bounded, whatever the model sends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text
from toolnexus_django.bounds import cut_marker
from toolnexus_django.conf import DEFAULTS
from toolnexus_django.models import Conversation, TaskRecord

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LIMIT = DEFAULTS["MAX_OUTPUT_CHARS"]


def test_a_5_mb_reply_completes_cut_at_the_limit_with_a_marker(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    # What is stored is bounded whatever the model may send: let the transport
    # read the whole 5 MB answer (its own bound, 4 MiB, refuses it unread).
    configure(fake_llm, MAX_MODEL_RESPONSE_BYTES=8 * 1024 * 1024)
    fake_llm.push(Text("y" * 5_000_000))
    done = rpc.wait(rpc.send("write a lot")["id"], timeout=60)
    assert done["status"]["state"] == "completed"

    expected = "y" * LIMIT + cut_marker(5_000_000, LIMIT)
    assert done["artifacts"][0]["parts"][0]["text"] == expected
    assert TaskRecord.objects.get(pk=done["id"]).task["artifacts"][0]["parts"][0]["text"] == (
        expected
    )
    # GetTask stays of the order of the limit (artifact + the answer in the
    # history), not of the reply; without the history, the artifact alone.
    reply = rpc.raw(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": done["id"]}})
    )
    assert len(reply.body) < 2 * LIMIT + 10_000
    lean = rpc.raw(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "GetTask",
                "params": {"id": done["id"], "historyLength": 0},
            }
        ),
        headers={"A2A-Version": "1.0"},
    )
    assert len(lean.body) < LIMIT + 10_000

    # The conversation remembers the cut text too.
    [conversation] = Conversation.objects.filter(context_id=done["contextId"])
    longest = max(len(str(m.get("content") or "")) for m in conversation.messages)
    assert longest == len(expected)


def test_a_conversation_remembers_its_last_turns_only(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, MAX_MEMORY_MESSAGES=4)
    fake_llm.default = Text("ok")
    context = rpc.wait(rpc.send("turn 1")["id"])["contextId"]
    for n in range(2, 6):
        rpc.wait(rpc.send(f"turn {n}", contextId=context)["id"])
    last = fake_llm.requests[-1].body["messages"]
    users = [m["content"] for m in last if m["role"] == "user"]
    # Two remembered turns (4 messages: user + answer each) and the new one.
    assert users == ["turn 3", "turn 4", "turn 5"]


def test_a_task_keeps_its_last_history_messages(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, MAX_HISTORY_MESSAGES=1)
    fake_llm.push(Text("the answer"))
    done = rpc.wait(rpc.send("a question")["id"])
    assert [m["role"] for m in done["history"]] == ["agent"]
    assert done["history"][0]["parts"][0]["text"] == "the answer"
