"""``approval=`` and ``permission=`` end to end, in this process: the fake
model over HTTP, the agent's ASGI endpoint on a real server, reviewers in
the real admin (Django's test client on the review page). The approved body
runs once and sees who approved it; declined or expired it never runs; an
edit reaches it; four eyes needs two reviewers, named in order; who may
answer is decided as for any Request; a model — of either shape — is not
offered a tool its run's owner may not use, and a forced call writes nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse

from tests import django_tools
from tests.conftest import RpcClient, basic, wait_until
from tests.fakes import FakeLLM, Text, ToolCall
from tests.utils import decisions_of, events_of, pending_id, private_of
from toolnexus_django.fulfilment.sweep import sweep_once

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

QUEUE = "admin:toolnexus_django_awaitinghumantask_changelist"
REVIEW = "admin:toolnexus_django_awaitinghumantask_review"


@pytest.fixture(autouse=True)
def _fresh(settings: Any) -> None:
    django_tools.SEEN.clear()
    # Every request signs in again with HTTP Basic: hash passwords cheaply.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def endpoint(asgi_server: Any, transactional_db: Any) -> str:
    return f"{asgi_server.url}/agent/"


def setup(configure: Any, fake: FakeLLM, **kw: Any) -> None:
    from django.conf import settings

    configure(
        fake,
        TOOLKIT={**settings.TOOLNEXUS["TOOLKIT"], "tools": django_tools.ALL},
        AUTHENTICATION_CLASSES=["rest_framework.authentication.BasicAuthentication"],
        PERMISSION_CLASSES=["rest_framework.permissions.IsAuthenticated"],
        **kw,
    )


def reviewer(django_user_model: Any, name: str) -> Client:
    user = django_user_model.objects.create_user(name, password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="answer_task"))
    client = Client()
    client.force_login(user)
    return client


def review(client: Client, task_id: str, action: str = "approve", **fields: str) -> Any:
    """Answer the Task's Request on its review page (``fields``: the form's own)."""
    data = {"_answer": action, "request_id": pending_id(task_id)}
    data.update({f"{action}-{k}": v for k, v in fields.items()})
    return client.post(reverse(REVIEW, args=[task_id]), data)


def waiting(rpc: RpcClient, text: str) -> dict[str, Any]:
    task = rpc.wait(rpc.send(text)["id"])
    assert task["status"]["state"] == "input-required", task["status"]
    return task


def tool_results(fake: FakeLLM, index: int) -> list[str]:
    return [m["content"] for m in fake.requests[index].body["messages"] if m["role"] == "tool"]


def bodies() -> list[tuple[str, tuple[str, ...]]]:
    """The tool bodies that ran, each with who approved it."""
    return [(name, said["approved_by"]) for name, said in django_tools.SEEN]


def test_an_approval_tool_waits_with_its_prompt_and_runs_once_approved_in_the_admin(
    endpoint: str, configure: Any, fake_llm: FakeLLM, users: Any, django_user_model: Any
) -> None:
    setup(configure, fake_llm)
    fake_llm.push(ToolCall("approved_group", {"name": "ops"}), Text("ops exists"))
    rpc = RpcClient(endpoint, basic("alice"))
    task = waiting(rpc, "make the ops group")
    assert task["status"]["message"]["parts"][0]["text"] == "Create the group ops?"
    assert not Group.objects.exists() and django_tools.SEEN == []

    rita = reviewer(django_user_model, "rita")
    queue = rita.get(reverse(QUEUE)).content.decode()
    assert "Create the group ops?" in queue and "approved_group" in queue
    assert review(rita, task["id"]).status_code == 302
    assert rpc.wait(task["id"])["status"]["state"] == "completed"

    assert [g.name for g in Group.objects.all()] == ["ops"]
    [(name, said)] = django_tools.SEEN
    assert (name, said["owner"], said["approved_by"]) == ("approved_group", "alice", ("rita",))
    assert said["answer"].ok is True and said["task_id"] == task["id"]
    assert tool_results(fake_llm, 1) == ["made ops after approval"]


def test_a_declined_approval_tells_the_model_and_never_runs_the_body(
    endpoint: str, configure: Any, fake_llm: FakeLLM, users: Any, django_user_model: Any
) -> None:
    setup(configure, fake_llm)
    fake_llm.push(ToolCall("approved_group", {"name": "ops"}), Text("not made"))
    rpc = RpcClient(endpoint, basic("alice"))
    task = waiting(rpc, "make the ops group")
    response = review(reviewer(django_user_model, "rita"), task["id"], "decline", reason="declined")
    assert response.status_code == 302
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    assert not Group.objects.exists() and django_tools.SEEN == []
    # The resumed run reports the decline itself; the tool is not called again.
    assert tool_results(fake_llm, 1) == ["declined: Create the group ops?"]


def test_an_expired_approval_never_runs_the_body(
    endpoint: str, configure: Any, fake_llm: FakeLLM, users: Any
) -> None:
    setup(configure, fake_llm)
    fake_llm.push(ToolCall("hurried_group", {"name": "ops"}), Text("too late"))
    rpc = RpcClient(endpoint, basic("alice"))
    task = waiting(rpc, "make the ops group, quickly")
    assert (private_of(task["id"]).pending or {}).get("expiresAt")
    # The sweep answers it once its second is up.
    wait_until(
        lambda: task["id"] in sweep_once()["expired"], timeout=10, interval=0.2, what="expiry"
    )
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    assert not Group.objects.exists() and django_tools.SEEN == []
    assert tool_results(fake_llm, 1) == ["expired: Create the group ops (soon, or never)?"]
    assert decisions_of(task["id"])[-1]["decision"] == "expire"


def test_edited_arguments_reach_the_body(
    endpoint: str, configure: Any, fake_llm: FakeLLM, users: Any, django_user_model: Any
) -> None:
    setup(configure, fake_llm)
    fake_llm.push(ToolCall("approved_group", {"name": "opps"}), Text("made"))
    rpc = RpcClient(endpoint, basic("alice"))
    task = waiting(rpc, "make the ops group")
    rita = reviewer(django_user_model, "rita")
    assert review(rita, task["id"], "edit", name="ops", comment="typo").status_code == 302
    assert rpc.wait(task["id"])["status"]["state"] == "completed"

    assert [g.name for g in Group.objects.all()] == ["ops"]
    assert bodies() == [("approved_group", ("rita",))]
    assert tool_results(fake_llm, 1) == ["made ops after approval"]
    [answer] = [e for e in events_of(task["id"]) if e["kind"] == "answer"]
    assert answer["private"]["arguments"] == {"before": {"name": "opps"}, "after": {"name": "ops"}}


def test_four_eyes_needs_two_reviewers_and_approved_by_names_both_in_order(
    endpoint: str, configure: Any, fake_llm: FakeLLM, users: Any, django_user_model: Any
) -> None:
    setup(configure, fake_llm, REVIEW={"APPROVALS": {"approved_group": 2}})
    rita, sam = reviewer(django_user_model, "rita"), reviewer(django_user_model, "sam")
    rpc = RpcClient(endpoint, basic("alice"))
    for name, first, second, names in (
        ("ops", rita, sam, ("rita", "sam")),
        ("dev", sam, rita, ("sam", "rita")),
    ):
        django_tools.SEEN.clear()
        fake_llm.on(f"make {name}", ToolCall("approved_group", {"name": name}), Text("made"))
        task = waiting(rpc, f"make {name}")
        assert review(first, task["id"]).status_code == 302
        # One approval of two: still waiting, nothing written.
        assert rpc.get(task["id"])["result"]["status"]["state"] == "input-required"
        assert review(first, task["id"]).status_code == 302  # the same reviewer again: refused
        assert rpc.get(task["id"])["result"]["status"]["state"] == "input-required"
        assert not Group.objects.filter(name=name).exists() and django_tools.SEEN == []
        assert review(second, task["id"]).status_code == 302
        assert rpc.wait(task["id"])["status"]["state"] == "completed"
        assert Group.objects.filter(name=name).count() == 1
        assert bodies() == [("approved_group", names)]


def answer_as_requester(rpc: RpcClient, task: dict[str, Any], text: str) -> dict[str, Any]:
    return rpc.call(
        "message/send",
        {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "user",
                "taskId": task["id"],
                "parts": [{"kind": "text", "text": text}],
            }
        },
    )


def test_the_requester_may_not_approve_an_approval_tool_unless_tool_answerers_says_so(
    endpoint: str, configure: Any, fake_llm: FakeLLM, users: Any
) -> None:
    setup(configure, fake_llm)
    fake_llm.push(ToolCall("approved_group", {"name": "ops"}), Text("made"))
    rpc = RpcClient(endpoint, basic("alice"))
    task = waiting(rpc, "make the ops group")
    refused = answer_as_requester(rpc, task, "yes, go ahead")
    assert refused["error"]["data"]["reason"] == "ANSWER_NOT_ALLOWED"
    assert rpc.get(task["id"])["result"]["status"]["state"] == "input-required"
    assert not Group.objects.exists() and django_tools.SEEN == []

    setup(configure, fake_llm, TOOL_ANSWERERS={"approved_group": ["requester", "reviewer"]})
    fake_llm.push(Text("made"))
    assert "result" in answer_as_requester(rpc, task, "yes, go ahead")
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    assert [g.name for g in Group.objects.all()] == ["ops"]
    # Approved, but by no reviewer.
    [(_, said)] = django_tools.SEEN
    assert said["answer"].ok is True and said["approved_by"] == ()


def test_the_requester_answers_an_input_tool_unless_tool_answerers_narrows_it(
    endpoint: str, configure: Any, fake_llm: FakeLLM, users: Any
) -> None:
    setup(configure, fake_llm)
    rpc = RpcClient(endpoint, basic("alice"))
    fake_llm.on("make ops", ToolCall("group_with_members", {"name": "ops"}), Text("made"))
    task = waiting(rpc, "make ops")
    assert task["status"]["message"]["parts"][0]["text"] == "Which members for the group ops?"
    assert "result" in answer_as_requester(rpc, task, "alice and bob")
    assert rpc.wait(task["id"])["status"]["state"] == "completed"
    [(_, said)] = django_tools.SEEN
    assert said["answer"].data == {"output": "alice and bob"} and said["approved_by"] == ()
    assert tool_results(fake_llm, 1) == ["made ops with alice and bob"]

    setup(configure, fake_llm, TOOL_ANSWERERS={"group_with_members": "reviewer"})
    fake_llm.on("make dev", ToolCall("group_with_members", {"name": "dev"}), Text("made"))
    task = waiting(rpc, "make dev")
    refused = answer_as_requester(rpc, task, "carol")
    assert refused["error"]["data"]["reason"] == "ANSWER_NOT_ALLOWED"
    assert rpc.get(task["id"])["result"]["status"]["state"] == "input-required"
    assert not Group.objects.filter(name="dev").exists()


def test_an_anthropic_model_is_offered_only_what_the_owner_may_use_and_a_forced_call_writes_nothing(
    endpoint: str, configure: Any, fake_anthropic: FakeLLM, users: Any
) -> None:
    setup(configure, fake_anthropic)
    fake_anthropic.push(ToolCall("make_group", {"name": "by-alice"}), Text("tried"))
    alice = RpcClient(endpoint, basic("alice"))
    assert alice.wait(alice.send("make a group")["id"])["status"]["state"] == "completed"
    offered = {t["name"] for t in fake_anthropic.requests[0].body["tools"]}
    assert "make_group" not in offered and {"whoami", "approved_group"} <= offered
    [refusal] = [
        block
        for m in fake_anthropic.requests[1].body["messages"]
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]
    assert refusal["is_error"] is True
    assert "needs the permission auth.add_group" in str(refusal["content"])
    assert not Group.objects.exists() and django_tools.SEEN == []

    users["bob"].user_permissions.add(Permission.objects.get(codename="add_group"))
    fake_anthropic.push(ToolCall("make_group", {"name": "by-bob"}), Text("made"))
    bob = RpcClient(endpoint, basic("bob"))
    assert bob.wait(bob.send("make a group")["id"])["status"]["state"] == "completed"
    assert "make_group" in {t["name"] for t in fake_anthropic.requests[2].body["tools"]}
    assert [g.name for g in Group.objects.all()] == ["by-bob"]
