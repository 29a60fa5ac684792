"""Background fulfilment end to end: real HTTP in, the fake model over real
HTTP, the configured store (django on SQLite or PostgreSQL, file, memory)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RpcClient
from tests.fakes import Fail, FakeLLM, Hang, Text, ToolCall
from tests.utils import private_of
from toolnexus_django.fulfilment.runs import close_runs
from toolnexus_django.signals import run_finished
from toolnexus_django.stores import DjangoTaskStore, FileTaskStore

pytestmark = pytest.mark.django_db(transaction=True)


def settle_background_work() -> None:
    """Wait for every run this process started to finish (bounded)."""
    assert close_runs(timeout=15), "background runs did not finish"


@pytest.mark.parametrize(
    ("send", "get"), [("SendMessage", "GetTask"), ("message/send", "tasks/get")]
)
def test_django_store_task_completes_and_reads_back_over_http(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, send: str, get: str
) -> None:
    from toolnexus_django.models import TaskRecord

    configure(fake_llm, store="django")
    fake_llm.push(Text("filed: EXP-1"))

    submitted = rpc.send("file my claim", method=send)
    # The toolnexus dialect returns at once; v0.3's message/send blocks by default.
    expected = ("submitted",) if send == "SendMessage" else ("completed",)
    assert submitted["status"]["state"] in expected
    assert submitted["kind"] == "task" and submitted["contextId"]

    done = rpc.wait(submitted["id"])
    assert done == rpc.get(submitted["id"], method=get)["result"]
    assert done["status"]["state"] == "completed"
    assert [p["text"] for p in done["artifacts"][0]["parts"]] == ["filed: EXP-1"]
    assert done["artifacts"][0]["artifactId"]
    assert [m["role"] for m in done["history"]] == ["user", "agent"]
    assert done["status"]["timestamp"].endswith("Z")

    row = TaskRecord.objects.get(pk=submitted["id"])
    assert row.state == "completed"
    assert row.context_id == submitted["contextId"]
    assert row.created_at <= row.updated_at
    # The model saw the user's text exactly once.
    assert [r.first_user_text for r in fake_llm.requests] == ["file my claim"]


def test_anthropic_style_model(rpc: RpcClient, configure: Any, fake_anthropic: FakeLLM) -> None:
    configure(fake_anthropic, store="memory")
    fake_anthropic.push(Text("bonjour"))
    task = rpc.send("say hello in French")
    done = rpc.wait(task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "bonjour"
    assert fake_anthropic.requests[0].path.endswith("/v1/messages")


@pytest.mark.parametrize("store_kind", ["django", "file"])
def test_suspending_tool_ends_input_required_and_the_request_survives(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, tmp_path: Path, store_kind: str
) -> None:
    store = "django" if store_kind == "django" else f"file:{tmp_path}"
    configure(fake_llm, store=store)
    fake_llm.push(ToolCall("file_expense", {"amount": 42.5, "description": "taxi"}))
    fake_llm.default = Text("this text must never be used")

    task = rpc.send("file an expense of 42.5 for a taxi")
    suspended = rpc.wait(task["id"])
    settle_background_work()

    assert suspended["status"]["state"] == "input-required"
    prompt = suspended["status"]["message"]["parts"][0]["text"]
    assert prompt == "Approve an expense claim of 42.50 for 'taxi'?"
    assert "artifacts" not in suspended
    # Still suspended once every background run has finished: never completed.
    assert rpc.get(task["id"])["result"]["status"]["state"] == "input-required"
    assert len(fake_llm.requests) == 1

    fresh = DjangoTaskStore() if store_kind == "django" else FileTaskStore(tmp_path)
    stored = fresh.get(task["id"])
    assert stored is not None
    pending = private_of(stored).pending
    assert pending["kind"] == "approval"
    assert pending["id"].startswith("approve-")
    assert pending["prompt"] == prompt
    assert pending["data"]["schema"]["required"] == ["cost_center"]
    transcript = private_of(stored).transcript
    assert private_of(stored).style == "openai"
    assert transcript[-1]["role"] == "tool"
    assert transcript[-2]["tool_calls"][0]["function"]["name"] == "file_expense"


@pytest.mark.parametrize(
    ("failure", "client_overrides", "expected"),
    [
        (
            Fail(500, "the model is on fire"),
            {},
            "The model service answered HTTP 500 (Internal Server Error)",
        ),
        (Hang(max_seconds=20), {"timeout_ms": 700}, "The model did not answer in time"),
        (Hang(max_seconds=20), {"RUN_TIMEOUT": 0.7}, "The run took longer than RUN_TIMEOUT (0.7s)"),
    ],
    ids=["http-500", "client-timeout", "run-timeout"],
)
def test_model_failure_fails_the_task_and_the_next_one_completes(
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    failure: Any,
    client_overrides: dict[str, Any],
    expected: str,
) -> None:
    client_overrides = dict(client_overrides)  # shared by this test's other parametrizations
    run_timeout = client_overrides.pop("RUN_TIMEOUT", None)
    client = configure(fake_llm)["CLIENT"]
    configure(
        fake_llm, store="django", client={**client, **client_overrides}, RUN_TIMEOUT=run_timeout
    )
    fake_llm.on("first task", failure)
    fake_llm.on("second task", Text("second one fine"))

    first = rpc.send("first task")
    failed = rpc.wait(first["id"])
    assert failed["status"]["state"] == "failed"
    reason = failed["status"]["message"]["parts"][0]["text"]
    assert reason.startswith(expected), reason
    fake_llm.release()

    second = rpc.send("second task")
    done = rpc.wait(second["id"])
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["text"] == "second one fine"


def test_run_finished_signal_carries_task_and_telemetry(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="memory")
    fake_llm.on("done please", Text("all done"))
    fake_llm.on("fail please", Fail(503, "overloaded"))
    fake_llm.on("ask please", ToolCall("file_expense", {"amount": 1, "description": "pen"}))
    seen: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        seen.append(kwargs)

    def broken_receiver(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("a receiver's bug must not change the task")

    run_finished.connect(receiver)
    run_finished.connect(broken_receiver)
    try:
        ids = {rpc.send(text)["id"]: text for text in ("done please", "fail please", "ask please")}
        for task_id in ids:
            rpc.wait(task_id)
        settle_background_work()
    finally:
        run_finished.disconnect(receiver)
        run_finished.disconnect(broken_receiver)

    by_state = {ev["state"]: ev for ev in seen}
    assert set(by_state) == {"completed", "failed", "input-required"}
    assert {ev["task_id"] for ev in seen} == set(ids)
    done = by_state["completed"]
    assert done["task"]["artifacts"][0]["parts"][0]["text"] == "all done"
    assert "_private" not in done["task"]
    assert done["result"].turns == 1
    assert done["result"].usage["total_tokens"] > 0
    assert by_state["failed"]["result"] is None
    assert by_state["input-required"]["result"].pending.kind == "approval"
    # The broken receiver changed nothing.
    assert rpc.get(done["task_id"])["result"]["status"]["state"] == "completed"


def test_concurrent_tasks_each_get_their_own_answer(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, store="django")
    for i in range(12):
        fake_llm.on(f"task number {i}.", Text(f"answer {i}"))
    ids = [rpc.send(f"task number {i}.")["id"] for i in range(12)]
    for i, task_id in enumerate(ids):
        done = rpc.wait(task_id)
        assert done["artifacts"][0]["parts"][0]["text"] == f"answer {i}"
    assert len(fake_llm.requests) == 12
