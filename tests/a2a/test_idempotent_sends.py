"""Idempotent sends: a send that repeats a messageId its owner already used
returns that Task — the same id, no second Task, no second model call —
within IDEMPOTENCY_WINDOW, on every store; another owner's same messageId is
a Task of its own; concurrent repeats still make one Task."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from tests.conftest import RpcClient, basic, wait_until
from tests.fakes import FakeLLM, Text

V1 = {"A2A-Version": "1.0"}


def send(rpc: RpcClient, message_id: str, text: str, **headers: str) -> dict[str, Any]:
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}
    reply = rpc.call(
        "SendMessage",
        {"message": message, "configuration": {"returnImmediately": True}},
        headers={**V1, **headers},
    )
    assert "result" in reply, reply
    return dict(reply["result"]["task"])


@pytest.fixture(params=["django", "memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    return f"file:{tmp_path}" if request.param == "file" else str(request.param)


def test_a_repeated_message_id_returns_the_same_task_and_runs_once(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, store: str
) -> None:
    configure(fake_llm, store=store)
    fake_llm.on("idempotent please", Text("ran once"))
    message_id = str(uuid.uuid4())
    first = send(rpc, message_id, "idempotent please")
    done = rpc.wait(first["id"])
    assert done["status"]["state"] == "completed"
    again = send(rpc, message_id, "idempotent please")
    assert again["id"] == first["id"]
    assert again["status"]["state"] == "TASK_STATE_COMPLETED"  # as it is now, not a new one
    # A blocking retry and a v0.3 retry get the same Task too.
    blocking = rpc.call(
        "SendMessage",
        {"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "x"}]}},
        headers=V1,
    )
    assert blocking["result"]["task"]["id"] == first["id"]
    v03 = rpc.call(
        "message/send",
        {"message": {"kind": "message", "messageId": message_id, "role": "user",
                     "parts": [{"kind": "text", "text": "x"}]}},
    )  # fmt: skip
    assert v03["result"]["id"] == first["id"]
    assert len(fake_llm.requests_for("idempotent please")) == 1  # one model call in all
    # A new messageId is a new Task.
    other = send(rpc, str(uuid.uuid4()), "idempotent please")
    assert other["id"] != first["id"]


def test_another_owners_same_message_id_is_its_own_task(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: Any
) -> None:
    configure(
        fake_llm,
        AUTHENTICATION_CLASSES=["rest_framework.authentication.BasicAuthentication"],
        PERMISSION_CLASSES=["rest_framework.permissions.IsAuthenticated"],
    )
    message_id = str(uuid.uuid4())
    alice = send(RpcClient(agent_url, basic("alice")), message_id, "shared id")
    bob = send(RpcClient(agent_url, basic("bob")), message_id, "shared id")
    assert alice["id"] != bob["id"]
    assert send(RpcClient(agent_url, basic("alice")), message_id, "shared id")["id"] == alice["id"]


def test_concurrent_repeats_make_one_task(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, store: str
) -> None:
    configure(fake_llm, store=store)
    fake_llm.on("all at once", Text("once"))
    message_id = str(uuid.uuid4())
    ids: list[str] = []
    gate = threading.Barrier(8)

    def racer() -> None:
        gate.wait(10)
        ids.append(send(rpc, message_id, "all at once")["id"])

    racers = [threading.Thread(target=racer) for _ in range(8)]
    for thread in racers:
        thread.start()
    for thread in racers:
        thread.join(30)
    assert len(ids) == 8 and len(set(ids)) == 1, ids
    rpc.wait(ids[0])
    assert len(fake_llm.requests_for("all at once")) == 1


def test_after_the_window_the_message_id_starts_a_new_task(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, store: str
) -> None:
    configure(fake_llm, store=store, IDEMPOTENCY_WINDOW=1.0)
    message_id = str(uuid.uuid4())
    first = send(rpc, message_id, "window")
    sent_at = time.monotonic()
    rpc.wait(first["id"])
    wait_until(lambda: time.monotonic() - sent_at > 1.1, timeout=5, what="the window to pass")
    second = send(rpc, message_id, "window")
    assert second["id"] != first["id"]
    # At once, well within the new Task's window (waiting for its run first
    # could outlast the window on a busy machine): the key went to the new
    # Task without a clash with the old one, which still moves.
    assert send(rpc, message_id, "window")["id"] == second["id"]
    rpc.wait(second["id"])


def test_a_window_of_0_makes_a_task_of_every_send(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, IDEMPOTENCY_WINDOW=0)
    message_id = str(uuid.uuid4())
    first = send(rpc, message_id, "no dedupe")
    second = send(rpc, message_id, "no dedupe")
    assert first["id"] != second["id"]
    wait_until(lambda: len(fake_llm.requests_for("no dedupe")) == 2, what="two runs")
