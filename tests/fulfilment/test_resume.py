"""Durable resume: a suspended run answered and continued where it stopped —
both transcript shapes, every store, across a restart, by expiry, over A2A."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from toolnexus import Answer

from tests import tools
from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Text, ToolCall
from tests.servers import database_url
from tests.utils import (
    REQUESTER_APPROVES,
    assert_event_log,
    decisions_of,
    pending_id,
    private_of,
    suspend,
)
from toolnexus_django.agent.runtime import shutdown_runtime
from toolnexus_django.fulfilment.runs import close_runs
from toolnexus_django.review import AnswerRefused, answer_task, expire_due
from toolnexus_django.stores import DjangoTaskStore, FileTaskStore, get_task_store

pytestmark = pytest.mark.django_db(transaction=True)

EXPENSE = ToolCall("file_expense", {"amount": 12.5, "description": "taxi"})
PROMPT = "Approve an expense claim of 12.50 for 'taxi'?"


@pytest.fixture(autouse=True)
def _fresh_tool_log() -> None:
    tools.CALLS.clear()


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m.get("role") == "tool"]


def test_approve_resumes_openai_transcript_without_a_new_user_turn(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(EXPENSE, Text("Your claim is filed."))
    task = suspend(rpc, fake_llm)
    first = fake_llm.requests[0].body["messages"]

    answer_task(
        task["id"], Answer(id=pending_id(task["id"]), ok=True), decision="approve", actor="rita"
    )
    done = rpc.wait(task["id"])

    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["text"] == "Your claim is filed."
    assert len(fake_llm.requests) == 2
    resumed = fake_llm.requests[1].body["messages"]
    # Exactly: what the model saw first, its own tool call, and the tool's real result.
    assert resumed[: len(first)] == first
    assistant, result = resumed[len(first) :]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["function"]["name"] == "file_expense"
    assert result["role"] == "tool"
    assert result["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert result["content"].startswith("Filed expense claim EXP-")
    assert [m["role"] for m in resumed].count("user") == 1
    # The tool ran twice in all: once to ask, once with the answer.
    stored = DjangoTaskStore().get(task["id"])
    assert decisions_of(task["id"])[0]["actor"] == "rita"
    kinds = [e["kind"] for e in assert_event_log(task["id"])]
    assert kinds == ["submit", "claim", "suspend", "answer", "resume", "complete"]
    assert private_of(stored).transcript is None and private_of(stored).pending is None


def test_approve_resumes_anthropic_transcript_without_a_new_user_turn(
    rpc: RpcClient, configure: Any, fake_anthropic: FakeLLM
) -> None:
    configure(fake_anthropic)
    fake_anthropic.push(EXPENSE, Text("Filed, thanks."))
    task = suspend(rpc, fake_anthropic)
    first = fake_anthropic.requests[0].body["messages"]
    assert first == [{"role": "user", "content": "file an expense of 12.5 for a taxi"}]

    answer_task(task["id"], Answer(id=pending_id(task["id"]), ok=True), decision="approve")
    done = rpc.wait(task["id"])

    assert done["artifacts"][0]["parts"][0]["text"] == "Filed, thanks."
    resumed = fake_anthropic.requests[1].body["messages"]
    assert len(resumed) == 3
    assert resumed[0] == first[0]
    use = next(b for b in resumed[1]["content"] if b["type"] == "tool_use")
    assert (resumed[1]["role"], use["name"]) == ("assistant", "file_expense")
    assert resumed[2]["role"] == "user"
    [block] = resumed[2]["content"]
    assert block["type"] == "tool_result" and block["tool_use_id"] == use["id"]
    assert block["is_error"] is False
    assert block["content"].startswith("Filed expense claim EXP-")


def test_decline_feeds_a_declined_result_and_the_model_finishes(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(EXPENSE, Text("Understood, not filed."))
    task = suspend(rpc, fake_llm)
    answer_task(
        task["id"],
        Answer(id=pending_id(task["id"]), ok=False, reason="declined"),
        decision="decline",
        comment="no receipt",
    )
    done = rpc.wait(task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "Understood, not filed."
    [result] = tool_messages(fake_llm.requests[1].body)
    assert result["content"] == f"declined: {PROMPT}"


def test_reply_data_reaches_the_tool_exactly(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(EXPENSE, Text("ok"))
    task = suspend(rpc, fake_llm)
    data = {"cost_center": "travel", "approved_amount": 10.0, "note": "half"}
    answer_task(task["id"], Answer(id=pending_id(task["id"]), ok=True, data=data), decision="reply")
    rpc.wait(task["id"])
    [result] = tool_messages(fake_llm.requests[1].body)
    assert result["content"].endswith(": 10.0 under travel.")


def test_wrong_answer_id_changes_nothing_and_a_second_answer_is_refused(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(EXPENSE, Text("done"))
    task = suspend(rpc, fake_llm)
    store = get_task_store()
    before = store.get(task["id"])

    with pytest.raises(AnswerRefused) as wrong:
        answer_task(task["id"], Answer(id="not-the-request", ok=True), decision="approve")
    assert wrong.value.reason == "wrong-request"
    assert store.get(task["id"]) == before

    answer_task(
        task["id"], Answer(id=pending_id(task["id"]), ok=True), decision="approve", actor="a"
    )
    with pytest.raises(AnswerRefused) as again:
        answer_task(
            task["id"], Answer(id=private_of(before).pending["id"], ok=True), decision="approve"
        )
    assert again.value.reason == "already-answered"
    assert "already answered (approve) by a" in str(again.value)
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    assert len(fake_llm.requests) == 2


def test_concurrent_answers_resume_once_threads(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(EXPENSE, Text("once"))
    task = suspend(rpc, fake_llm)
    request_id = pending_id(task["id"])
    racers = 6
    barrier = threading.Barrier(racers)
    outcomes: list[str] = []

    def answer(n: int) -> None:
        from django.db import connection

        try:
            barrier.wait(timeout=10)
            answer_task(
                task["id"], Answer(id=request_id, ok=True), decision="approve", actor=f"r{n}"
            )
            outcomes.append("won")
        except AnswerRefused as refused:
            outcomes.append(refused.reason)
        finally:
            connection.close()

    threads = [threading.Thread(target=answer, args=(n,)) for n in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(outcomes) == ["already-answered"] * (racers - 1) + ["won"]
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    assert close_runs(timeout=15)
    file_calls = [c for c in tools.CALLS if c[0] == "file_expense"]
    assert len(fake_llm.requests) == 2, "the run resumed more than once"
    assert len(decisions_of(task["id"])) == 1
    del file_calls


def test_second_suspension_then_later_calls_of_the_turn(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    """One turn calls two_step then lookup. two_step asks twice; after the second
    answer, lookup (same turn) runs and both results reach the model."""
    configure(fake_llm, TOOLKIT=tools.toolkit_setting())
    fake_llm.push(
        ToolCall.many([("two_step", {"topic": "audit"}), ("lookup", {"code": "X1"})]),
        Text("all finished"),
    )
    task = suspend(rpc, fake_llm, "start the audit")
    assert task["status"]["message"]["parts"][0]["text"] == "May I start?"

    answer_task(task["id"], Answer(id=pending_id(task["id"]), ok=True), decision="approve")
    again = rpc.wait(task["id"], states=("input-required", "completed", "failed"))
    assert again["status"]["state"] == "input-required"
    assert again["status"]["message"]["parts"][0]["text"] == "Which detail?"
    assert len(fake_llm.requests) == 1, "the model is not called between the two questions"

    data = {"detail": "Q3"}
    answer_task(task["id"], Answer(id=pending_id(task["id"]), ok=True, data=data), decision="reply")
    done = rpc.wait(task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "all finished"
    results = tool_messages(fake_llm.requests[1].body)
    assert [r["content"] for r in results] == ["done with audit: {'detail': 'Q3'}", "looked up X1"]
    assert [c[0] for c in tools.CALLS].count("lookup") == 2  # the first turn's run + the resume


@pytest.mark.parametrize("kind", ["file", "django"])
def test_resume_after_a_restart(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, tmp_path: Path, kind: str
) -> None:
    configure(fake_llm, store=f"file:{tmp_path}" if kind == "file" else "django")
    fake_llm.push(EXPENSE, Text("filed after the restart"))
    task = suspend(rpc, fake_llm)

    # "Restart": the runtime and the background pool go away; a fresh store
    # instance over the same directory / database takes the answer.
    assert close_runs(timeout=15)
    shutdown_runtime()
    fresh = FileTaskStore(tmp_path) if kind == "file" else DjangoTaskStore()
    request_id = private_of(fresh.get(task["id"])).pending["id"]
    answer_task(task["id"], Answer(id=request_id, ok=True), decision="approve", store=fresh)

    done = rpc.wait(task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "filed after the restart"
    if kind == "file":
        on_disk = json.loads(fresh.path_for(task["id"]).read_text())
        assert on_disk["status"]["state"] == "completed"


def test_an_expired_request_ends_the_wait_without_anyone(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOLKIT=tools.toolkit_setting())
    fake_llm.on("first", ToolCall("expiring", {"seconds": -1}), Text("too late, skipped"))
    fake_llm.on("second", ToolCall("expiring", {"seconds": 3600}), Text("unused"))
    stale = suspend(rpc, fake_llm, "first")
    fresh = suspend(rpc, fake_llm, "second")

    assert expire_due() == [stale["id"]]
    done = rpc.wait(stale["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "too late, skipped"
    [result] = tool_messages(fake_llm.requests[2].body)
    assert result["content"] == "expired: Approve before the deadline?"
    kinds = [e["kind"] for e in assert_event_log(stale["id"])]
    assert kinds == ["submit", "claim", "suspend", "expire", "resume", "complete"]
    audit = decisions_of(stale["id"])
    assert (audit[0]["decision"], audit[0]["via"], audit[0]["reason"]) == (
        "expire",
        "expiry",
        "expired",
    )
    assert rpc.get(fresh["id"])["result"]["status"]["state"] == "input-required"


def test_the_expiry_command_and_sweeper(rpc: RpcClient, configure: Any, fake_llm: FakeLLM) -> None:
    from io import StringIO

    from django.core.management import call_command

    from toolnexus_django.fulfilment.sweep import Housekeeper

    configure(fake_llm, TOOLKIT=tools.toolkit_setting())
    fake_llm.on("one", ToolCall("expiring", {"seconds": -1}), Text("swept"))
    fake_llm.on("two", ToolCall("expiring", {"seconds": 0.5}), Text("swept by the thread"))
    by_command = suspend(rpc, fake_llm, "one")
    out = StringIO()
    call_command("toolnexus_sweep", stdout=out)
    assert f"expired: 1\n  {by_command['id']}\n" in out.getvalue()
    assert rpc.wait(by_command["id"])["status"]["state"] == "completed"

    by_thread = suspend(rpc, fake_llm, "two")
    sweeper = Housekeeper(interval=0.1).start()
    try:
        done = rpc.wait(by_thread["id"], states=("completed",), timeout=20)
    finally:
        sweeper.stop()
    assert done["artifacts"][0]["parts"][0]["text"] == "swept by the thread"


def test_a2a_message_with_task_id_continues_the_task(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOL_ANSWERERS=REQUESTER_APPROVES)
    fake_llm.push(EXPENSE, Text("continued over A2A"))
    task = suspend(rpc, fake_llm)

    reply = rpc.call(
        "message/send",
        {
            "message": {
                "messageId": "answer-1",
                "role": "user",
                "taskId": task["id"],
                "contextId": task["contextId"],
                "parts": [{"kind": "data", "data": {"cost_center": "training"}}],
            }
        },
    )
    assert reply["result"]["id"] == task["id"]
    # v0.3's message/send blocks by default: the answer comes back finished.
    assert reply["result"]["status"]["state"] in ("working", "completed")
    done = rpc.wait(task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "continued over A2A"
    [result] = tool_messages(fake_llm.requests[1].body)
    assert result["content"].endswith("under training.")
    assert [m["role"] for m in done["history"]] == ["user", "agent", "user", "agent"]
    assert done["history"][1]["parts"][0]["text"] == PROMPT

    # Now terminal: a further message is refused.
    terminal = rpc.call(
        "SendMessage",
        {
            "message": {
                "role": "user",
                "taskId": task["id"],
                "parts": [{"kind": "text", "text": "x"}],
            }
        },
    )
    assert terminal["error"]["code"] == -32004


def test_a2a_text_answer_and_context_mismatch(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(
        fake_llm,
        TOOLKIT=tools.toolkit_setting(),
        TOOL_ANSWERERS={"two_step": ["requester", "reviewer"]},
    )
    fake_llm.push(ToolCall("two_step", {"topic": "t"}), Text("fine"))
    task = suspend(rpc, fake_llm, "go")

    mismatch = rpc.call(
        "SendMessage",
        {
            "message": {
                "role": "user",
                "taskId": task["id"],
                "contextId": "some-other-context",
                "parts": [{"kind": "text", "text": "yes"}],
            }
        },
    )
    assert mismatch["error"]["code"] == -32602
    assert rpc.get(task["id"])["result"]["status"]["state"] == "input-required"

    rpc.call(
        "SendMessage",
        {
            "message": {
                "role": "user",
                "taskId": task["id"],
                "parts": [{"kind": "text", "text": "yes"}],
            }
        },
    )
    second = rpc.wait(task["id"])
    assert second["status"]["message"]["parts"][0]["text"] == "Which detail?"
    rpc.call(
        "SendMessage",
        {
            "message": {
                "role": "user",
                "taskId": task["id"],
                "parts": [{"kind": "text", "text": "Q4"}],
            }
        },
    )
    rpc.wait(task["id"], states=("completed",))
    [result] = tool_messages(fake_llm.requests[1].body)
    assert result["content"] == "done with t: {'output': 'Q4'}"


def test_authorization_request_waits_in_auth_required(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOLKIT=tools.toolkit_setting())
    fake_llm.push(ToolCall("login", {}), Text("in"))
    task = suspend(rpc, fake_llm, "log me in")
    assert task["status"]["state"] == "auth-required"
    assert "example.com" not in json.dumps(task)  # the login URL stays server-side
    answer_task(task["id"], Answer(id=pending_id(task["id"]), ok=True), decision="authorize")
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    [result] = tool_messages(fake_llm.requests[1].body)
    assert result["content"] == "logged in"


def test_awaiting_human_signal_and_email(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, mailoutbox: list[Any], settings: Any
) -> None:
    from toolnexus_django.signals import awaiting_human

    configure(
        fake_llm,
        REVIEW={
            **settings.TOOLNEXUS["REVIEW"],
            "NOTIFY_EMAILS": ["ops@example.com"],
            "BASE_URL": "https://agents.example.com",
        },
    )
    fake_llm.push(EXPENSE)
    seen: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        seen.append(kwargs)

    awaiting_human.connect(receiver)
    try:
        task = suspend(rpc, fake_llm)
        assert close_runs(timeout=15)
    finally:
        awaiting_human.disconnect(receiver)
    assert [s["task_id"] for s in seen] == [task["id"]]
    assert seen[0]["request"]["prompt"] == PROMPT
    wait_until(lambda: mailoutbox, timeout=5, what="the e-mail")
    [mail] = mailoutbox
    assert mail.to == ["ops@example.com"]
    assert PROMPT in mail.body
    assert (
        f"https://agents.example.com/admin/toolnexus_django/awaitinghumantask/{task['id']}/review/"
        in mail.body
    )


def test_concurrent_answers_resume_once_processes(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    import os
    import subprocess
    import sys
    import time

    configure(fake_llm)
    fake_llm.push(EXPENSE, Text("answered by exactly one process"))
    task = suspend(rpc, fake_llm)
    request_id = pending_id(task["id"])
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "TOOLNEXUS_STORE": "django",
        "LLM_BASE_URL": fake_llm.url,
        "LLM_RETRIES": "0",
        "TOOLNEXUS_LOG_LEVEL": "WARNING",
    }
    start_at = time.time() + 3  # every process has imported Django by then
    racers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.answer_race",
                task["id"],
                request_id,
                str(start_at),
                f"p{n}",
            ],
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    outputs = []
    try:
        for proc in racers:
            out, err = proc.communicate(timeout=90)
            assert proc.returncode == 0, err[-2000:]
            outputs.append(out.strip())
    finally:
        for proc in racers:
            if proc.poll() is None:
                proc.kill()
    assert sorted(outputs) == ["already-answered"] * 3 + ["won"]
    done = rpc.wait(task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "answered by exactly one process"
    assert len(fake_llm.requests) == 2, "the run resumed more than once"


def test_answering_an_older_request_again_says_already_answered(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, TOOLKIT=tools.toolkit_setting())
    fake_llm.push(ToolCall("two_step", {"topic": "x"}), Text("fine"))
    task = suspend(rpc, fake_llm, "go")
    first = pending_id(task["id"])
    answer_task(task["id"], Answer(id=first, ok=True), decision="approve", actor="ann")
    rpc.wait(task["id"], states=("input-required",))
    with pytest.raises(AnswerRefused) as refused:
        answer_task(task["id"], Answer(id=first, ok=True), decision="approve", actor="bob")
    assert refused.value.reason == "already-answered"
    assert "by ann" in str(refused.value) and "waits on another one" in str(refused.value)
