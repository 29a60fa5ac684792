"""Exactly once, where the database can make it so: an ``atomic=`` tool's call
records its outcome in the same transaction as its writes, keyed by the Task,
the turn and the call id, and a replay of the call (a resume after a crash, or
the later calls of the halted turn) returns that outcome instead of running the
body again. A tool that is not ``atomic=`` dedupes with the call's
``current_run().idempotency_key``, which a replay repeats.

In this process: the scripted model (``toolnexus_django.testing``) and the
app's own resume (``agent.replay.continue_run``), on a database whose
transactions commit. A crash of a real server is in
tests/e2e/test_crash_exactly_once.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import toolnexus
from django.contrib.auth.models import Group, Permission
from toolnexus import Answer, Request

from testproject.demo import payment_reference
from tests import django_tools
from toolnexus_django.agent.replay import continue_run
from toolnexus_django.agent.runtime import build_toolkit
from toolnexus_django.models import ToolCallOutcome
from toolnexus_django.testing import ScriptedModel, answer, call, run_task, say
from toolnexus_django.tools.context import new_run, running

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _tools(settings: Any) -> None:
    django_tools.SEEN.clear()
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "TOOLKIT": {**settings.TOOLNEXUS["TOOLKIT"], "tools": django_tools.ALL},
    }


@pytest.fixture
def alice(django_user_model: Any) -> Any:
    user = django_user_model.objects.create_user("alice", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_group"))
    return user


@pytest.fixture
def rita(django_user_model: Any) -> Any:
    user = django_user_model.objects.create_user("rita", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="answer_task"))
    return user


def ran(tool: str) -> list[dict[str, Any]]:
    """What each run of ``tool``'s body saw, in order."""
    return [said for name, said in django_tools.SEEN if name == tool]


def both(first: str, second: str) -> dict[str, Any]:
    """One model turn calling ``approved_group(first)`` then ``make_group(second)``."""
    return {
        "tool_calls": [
            {"name": "approved_group", "arguments": {"name": first}},
            {"name": "make_group", "arguments": {"name": second}},
        ]
    }


def test_every_tool_call_knows_its_call_turn_and_idempotency_key(alice: Any) -> None:
    with ScriptedModel(call("make_group", name="ops"), say("done")) as script:
        done = run_task("make ops", owner=alice)
    assert done.state == "completed"
    [said] = ran("make_group")
    sent = script.turns[0].messages
    # The model's answer follows the messages it was sent: that index is the call's turn.
    assert (said["call_id"], said["turn"]) == ("call_0", len(sent))
    assert said["idempotency_key"] == f"{done.task_id}:{len(sent)}:call_0"
    outcome = ToolCallOutcome.objects.get()
    assert (outcome.task_id, outcome.turn, outcome.call_id, outcome.tool) == (
        done.task_id,
        len(sent),
        "call_0",
        "make_group",
    )
    assert outcome.result["output"] == "made ops" and outcome.result["is_error"] is False


def test_an_atomic_call_beside_the_halted_one_runs_once_when_the_task_resumes(
    alice: Any, rita: Any
) -> None:
    # toolnexus runs every call of a turn at once; the turn halts on the
    # approval, and the resume makes the calls after it again.
    with ScriptedModel(both("ops", "sales"), say("both made")) as script:
        waiting = run_task("make ops and sales", owner=alice)
        assert waiting.state == "input-required"
        assert [g.name for g in Group.objects.all()] == ["sales"]
        done = answer(waiting, as_user=rita)
    assert done.state == "completed"
    assert sorted(g.name for g in Group.objects.all()) == ["ops", "sales"]
    assert len(ran("make_group")) == 1  # not again on the resume
    # The model reads the result the call made the first time, not an error.
    results = [m["content"] for m in script.turns[1].messages if m.get("role") == "tool"]
    assert results == ["made ops after approval", "made sales"]


def test_a_model_reusing_its_call_ids_on_later_turns_gets_each_call_made(
    alice: Any, rita: Any
) -> None:
    # The in-process client names calls call_0, call_1... on every turn.
    script = ScriptedModel(
        call("approved_group", name="ops"), call("approved_group", name="sales"), say("made")
    )
    with script:
        first = run_task("make ops, then sales", owner=alice)
        second = answer(first, as_user=rita)
        assert second.state == "input-required"
        done = answer(second, as_user=rita)
    assert done.state == "completed"
    assert sorted(g.name for g in Group.objects.all()) == ["ops", "sales"]
    turns = [said["turn"] for said in ran("approved_group")]
    assert [said["call_id"] for said in ran("approved_group")] == ["call_0", "call_0"]
    assert turns[0] < turns[1]


def test_a_body_that_raises_records_nothing_and_a_replay_runs_it_again(alice: Any) -> None:
    with ScriptedModel(call("make_group", name="ops", fail=True), say("failed")):
        assert run_task("make ops", owner=alice).state == "completed"
    assert not Group.objects.exists() and not ToolCallOutcome.objects.exists()


# -- a replay of the resume, as after a crash ---------------------------------


class Crash(Exception):
    """The process died here (the model call after the tool's commit)."""


def resume_once(
    task_id: str, owner: Any, generate: Any, tool: str = "approved_group", **arguments: Any
) -> toolnexus.RunResult:
    """One resume of a Task halted on ``tool(**arguments)`` (default
    ``approved_group(name="ops")``; call id ``c-1``, made by the model's
    message at index 1 of the transcript), approved, as a worker runs it."""
    request = Request(id="approve-1", kind="approval", prompt=f"May {tool} run?")
    made = {
        "id": "c-1",
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps(arguments or {"name": "ops"})},
    }
    transcript = [
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": None, "tool_calls": [made]},
        {"role": "tool", "tool_call_id": "c-1", "content": request.prompt},
    ]
    answered = Answer(id=request.id, ok=True)
    client = toolnexus.create_in_process_client(model="m", generate=generate)

    async def resume() -> toolnexus.RunResult:
        toolkit = await build_toolkit()
        with running(new_run(task_id=task_id, context_id=None, owner_id=str(owner.pk))):
            return await continue_run(
                client,
                toolkit,
                transcript=transcript,
                style="openai",
                request=request,
                answer=answered,
            )

    return asyncio.run(resume())


def tool_result_then(reply: Any, seen: list[str]) -> Any:
    """A model that notes the tool result it is sent, then does ``reply``."""

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request["messages"][-1]["content"])
        if isinstance(reply, type) and issubclass(reply, BaseException):
            raise reply
        return {"content": reply}

    return generate


def test_a_replayed_resume_returns_the_recorded_outcome_and_writes_once(alice: Any) -> None:
    seen: list[str] = []
    with pytest.raises(Crash):
        resume_once("task-1", alice, tool_result_then(Crash, seen))
    assert [g.name for g in Group.objects.all()] == ["ops"]  # committed before the crash

    result = resume_once("task-1", alice, tool_result_then("ops exists", seen))
    assert (result.status, result.text) == ("done", "ops exists")
    assert [g.name for g in Group.objects.all()] == ["ops"]
    assert len(ran("approved_group")) == 1
    assert seen == ["made ops after approval"] * 2
    outcome = ToolCallOutcome.objects.get()
    assert (outcome.task_id, outcome.turn, outcome.call_id) == ("task-1", 1, "c-1")


def test_a_tool_that_is_not_atomic_gets_the_same_idempotency_key_on_a_replay(
    alice: Any, settings: Any
) -> None:
    toolkit = settings.TOOLNEXUS["TOOLKIT"]
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "TOOLKIT": {**toolkit, "tools": [*toolkit["tools"], "testproject.demo.pay_supplier"]},
    }
    paid: list[str] = []
    with pytest.raises(Crash):
        resume_once(
            "task-2",
            alice,
            tool_result_then(Crash, paid),
            "pay_supplier",
            supplier="Acme",
            amount=5,
        )
    resume_once(
        "task-2", alice, tool_result_then("paid", paid), "pay_supplier", supplier="Acme", amount=5
    )
    # The body ran twice (nothing recorded it), and asked the provider for one payment.
    assert paid == [paid[0]] * 2 and paid[0].startswith("Paid 5.00 to Acme: PAY-")
    assert paid[0] == f"Paid 5.00 to Acme: {payment_reference('task-2:1:c-1')}."
    assert not ToolCallOutcome.objects.exists()
    resume_once(
        "task-3", alice, tool_result_then("paid", paid), "pay_supplier", supplier="Acme", amount=5
    )
    assert paid[-1] != paid[0]  # another Task's call: another payment
