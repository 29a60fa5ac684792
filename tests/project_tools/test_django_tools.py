"""Tools that act on the project's data as the person who asked:
``current_run()``, ``permission=``, ``atomic=``, ``approval=``."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from toolnexus import Answer

from tests import django_tools
from tests.conftest import RpcClient, basic
from tests.fakes import FakeLLM, Text, ToolCall
from tests.utils import pending_id
from toolnexus_django.review import answer_task

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    django_tools.SEEN.clear()


def setup(configure: Any, fake: FakeLLM, **kw: Any) -> None:
    from django.conf import settings

    configure(
        fake,
        TOOLKIT={**settings.TOOLNEXUS["TOOLKIT"], "tools": django_tools.ALL},
        AUTHENTICATION_CLASSES=["rest_framework.authentication.BasicAuthentication"],
        PERMISSION_CLASSES=["rest_framework.permissions.AllowAny"],
        **kw,
    )


def offered(fake: FakeLLM, index: int = 0) -> set[str]:
    tools = fake.requests[index].body.get("tools") or []
    return {t["function"]["name"] for t in tools}


def test_current_run_names_the_task_its_context_and_its_owner_in_sync_and_async_tools(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: dict[str, Any]
) -> None:
    setup(configure, fake_llm)
    fake_llm.push(ToolCall("whoami", {}), ToolCall("awhoami", {}), Text("done"))
    rpc = RpcClient(agent_url, headers=basic("alice"))
    task = rpc.wait(rpc.send("who am I?", contextId="ctx-1")["id"])
    assert task["status"]["state"] == "completed"
    [(_, sync), (_, coro)] = django_tools.SEEN
    for said in (sync, coro):
        assert (said["task_id"], said["context_id"], said["owner"]) == (
            task["id"],
            "ctx-1",
            "alice",
        )
        assert said["answer"] is None and said["approved_by"] == ()
    assert sync["thread"].startswith("toolnexus-tool")


def test_permission_hides_the_tool_from_owners_without_it_and_refuses_a_forced_call(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: dict[str, Any]
) -> None:
    setup(configure, fake_llm)
    users["bob"].user_permissions.add(Permission.objects.get(codename="add_group"))
    fake_llm.push(ToolCall("make_group", {"name": "by-alice"}), Text("tried"))
    alice = RpcClient(agent_url, headers=basic("alice"))
    assert alice.wait(alice.send("make a group")["id"])["status"]["state"] == "completed"
    assert "make_group" not in offered(fake_llm, 0)
    assert {"whoami", "awhoami", "approved_group"} <= offered(fake_llm, 0)
    refusal = [m for m in fake_llm.requests[1].body["messages"] if m.get("role") == "tool"]
    assert "needs the permission auth.add_group" in refusal[0]["content"]
    assert not Group.objects.filter(name="by-alice").exists()
    assert django_tools.SEEN == []

    fake_llm.push(ToolCall("make_group", {"name": "by-bob"}), Text("made"))
    bob = RpcClient(agent_url, headers=basic("bob"))
    assert bob.wait(bob.send("make a group")["id"])["status"]["state"] == "completed"
    assert "make_group" in offered(fake_llm, 2)
    assert Group.objects.filter(name="by-bob").exists()


def test_anonymous_owners_hold_no_permission(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    setup(configure, fake_llm)
    fake_llm.push(Text("hello"))
    rpc = RpcClient(agent_url)
    rpc.wait(rpc.send("hi")["id"])
    assert "make_group" not in offered(fake_llm, 0)


def test_atomic_leaves_nothing_written_when_the_tool_raises_and_the_task_still_ends(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: dict[str, Any]
) -> None:
    setup(configure, fake_llm)
    users["alice"].user_permissions.add(Permission.objects.get(codename="add_group"))
    fake_llm.push(ToolCall("make_group", {"name": "half", "fail": True}), Text("it failed"))
    rpc = RpcClient(agent_url, headers=basic("alice"))
    task = rpc.wait(rpc.send("make a group")["id"])
    assert task["status"]["state"] == "completed"
    assert [name for name, _ in django_tools.SEEN] == ["make_group"]
    assert not Group.objects.filter(name="half").exists()
    [result] = [m for m in fake_llm.requests[1].body["messages"] if m.get("role") == "tool"]
    assert result["content"] == "the tool failed after writing"


def test_approval_runs_the_body_only_after_a_reviewer_approves_and_names_the_reviewer(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: dict[str, Any]
) -> None:
    setup(configure, fake_llm)
    fake_llm.push(ToolCall("approved_group", {"name": "ops"}), Text("created"))
    rpc = RpcClient(agent_url, headers=basic("alice"))
    task = rpc.wait(rpc.send("make the ops group")["id"])
    assert task["status"]["state"] == "input-required"
    assert task["status"]["message"]["parts"][0]["text"] == "Create the group ops?"
    assert not Group.objects.filter(name="ops").exists() and django_tools.SEEN == []

    answer_task(
        task["id"], Answer(id=pending_id(task["id"]), ok=True), decision="approve", actor="rita"
    )
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    assert Group.objects.filter(name="ops").count() == 1
    [(_, said)] = django_tools.SEEN
    assert said["owner"] == "alice" and said["approved_by"] == ("rita",)
    assert said["answer"].ok is True


def test_a_declined_approval_never_runs_the_body(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: dict[str, Any]
) -> None:
    setup(configure, fake_llm)
    fake_llm.push(ToolCall("approved_group", {"name": "ops"}), Text("not created"))
    rpc = RpcClient(agent_url, headers=basic("alice"))
    task = rpc.wait(rpc.send("make the ops group")["id"])
    answer_task(
        task["id"],
        Answer(id=pending_id(task["id"]), ok=False, reason="declined"),
        decision="decline",
        actor="rita",
    )
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    assert not Group.objects.filter(name="ops").exists() and django_tools.SEEN == []


def test_current_run_is_none_outside_a_run() -> None:
    import toolnexus_django

    assert toolnexus_django.current_run() is None
