"""``toolnexus_django.testing``, the helpers a project's own tests use: a
scripted model that records what it was offered, a Task run in-process to
its end or to its Request, and that Request answered as a given person by
the same rules as the admin (four eyes, edits, who may answer)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission

from tests import django_tools
from toolnexus_django.testing import (
    AnswerRefused,
    ScriptedModel,
    answer,
    call,
    run_task,
    say,
)

TOOLS = [*django_tools.ALL, "testproject.demo.ask_requester"]


@pytest.fixture(autouse=True)
def toolkit(settings: Any) -> None:
    django_tools.SEEN.clear()
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "TOOLKIT": {**settings.TOOLNEXUS["TOOLKIT"], "tools": TOOLS},
    }


@pytest.fixture
def people(django_user_model: Any) -> dict[str, Any]:
    """alice (may add groups), and two reviewers, rita and sam."""
    made = {n: django_user_model.objects.create_user(n) for n in ("alice", "rita", "sam")}
    made["alice"].user_permissions.add(Permission.objects.get(codename="add_group"))
    for reviewer in ("rita", "sam"):
        made[reviewer].user_permissions.add(Permission.objects.get(codename="answer_task"))
    return made


def seen(tool: str) -> list[dict[str, Any]]:
    return [said for name, said in django_tools.SEEN if name == tool]


@pytest.mark.django_db(transaction=True)
def test_the_scripted_model_records_what_it_was_offered_and_sent_each_turn(
    people: dict[str, Any],
) -> None:
    script = ScriptedModel(say("hi"), call("whoami"), say("done"))
    with script:
        run_task("hello")  # anonymous: no permission, so no make_group
        run_task("who am I?", owner=people["alice"])
    assert "make_group" not in script.offered[0]
    assert {"make_group", "whoami", "approved_group"} <= script.offered[1] == script.offered[2]
    assert script.turns[1].messages[-1] == {"role": "user", "content": "who am I?"}
    assert script.turns[1].reply == call("whoami")
    assert script.turns[2].messages[-1]["content"] == "you are alice"


@pytest.mark.django_db(transaction=True)
def test_run_task_runs_the_task_to_its_end_as_its_owner(people: dict[str, Any]) -> None:
    with ScriptedModel(call("whoami"), call("awhoami"), say("You are alice.")):
        done = run_task("who am I?", owner=people["alice"], context_id="ctx-7")
    assert (done.state, done.text, done.request) == ("completed", "You are alice.", None)
    assert done.context_id == "ctx-7"
    assert done.task["artifacts"][0]["parts"] == [{"kind": "text", "text": "You are alice."}]
    for said in (*seen("whoami"), *seen("awhoami")):
        assert said["task_id"] == done.task_id
        assert (said["context_id"], said["owner"]) == ("ctx-7", "alice")
    assert seen("whoami")[0]["thread"].startswith("toolnexus-tool")


@pytest.mark.django_db(transaction=True)
def test_a_task_stops_on_its_request_and_runs_on_once_a_reviewer_approves(
    people: dict[str, Any],
) -> None:
    with ScriptedModel(call("approved_group", name="ops"), say("Created.")):
        waiting = run_task("make the ops group", owner=people["alice"])
        assert (waiting.state, waiting.text) == ("input-required", "Create the group ops?")
        assert waiting.request is not None and waiting.request.kind == "approval"
        assert not Group.objects.filter(name="ops").exists() and seen("approved_group") == []

        done = answer(waiting, as_user=people["rita"])
    assert (done.state, done.text) == ("completed", "Created.")
    assert Group.objects.filter(name="ops").count() == 1
    [said] = seen("approved_group")
    assert (said["owner"], said["approved_by"]) == ("alice", ("rita",))


@pytest.mark.django_db(transaction=True)
def test_a_declined_request_never_runs_the_body(people: dict[str, Any]) -> None:
    script = ScriptedModel(call("approved_group", name="ops"), say("Not created."))
    with script:
        waiting = run_task("make the ops group", owner=people["alice"])
        done = answer(waiting, as_user=people["rita"], ok=False, reason="no budget")
    assert done.state == "completed"
    assert not Group.objects.filter(name="ops").exists() and seen("approved_group") == []
    assert script.turns[-1].messages[-1]["content"] == "no budget: Create the group ops?"


@pytest.mark.django_db(transaction=True)
def test_four_eyes_needs_two_different_reviewers(people: dict[str, Any], settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": {"APPROVALS": {"approved_group": 2}}}
    with ScriptedModel(call("approved_group", name="ops"), say("Created.")):
        waiting = run_task("make the ops group", owner=people["alice"])
        once = answer(waiting, as_user=people["rita"])
        assert once.state == "input-required" and seen("approved_group") == []
        with pytest.raises(AnswerRefused, match="already approved"):
            answer(waiting, as_user=people["rita"])
        done = answer(waiting, as_user=people["sam"])
    assert done.state == "completed"
    [said] = seen("approved_group")
    assert said["approved_by"] == ("rita", "sam")


@pytest.mark.django_db(transaction=True)
def test_arguments_edited_before_the_approval_reach_the_body(people: dict[str, Any]) -> None:
    with ScriptedModel(call("approved_group", name="ops"), say("Created.")):
        waiting = run_task("make the ops group", owner=people["alice"])
        done = answer(waiting, as_user=people["rita"], arguments={"name": "operations"})
    assert done.state == "completed"
    assert list(Group.objects.values_list("name", flat=True)) == ["operations"]


@pytest.mark.django_db(transaction=True)
def test_who_may_answer_is_the_admins_rule(people: dict[str, Any]) -> None:
    with ScriptedModel(
        call("approved_group", name="ops"),
        call("ask_requester", question="Which city?"),
        say("Booked."),
    ):
        approval = run_task("make the ops group", owner=people["alice"])
        with pytest.raises(AnswerRefused, match="reviewer"):  # no approving one's own call
            answer(approval, as_user=people["alice"], role="requester")
        with pytest.raises(AnswerRefused, match="not allowed"):  # no answer_task
            answer(approval, as_user=people["alice"])

        question = run_task("book a trip", owner=people["alice"])
        assert question.request is not None and question.request.kind == "input"
        done = answer(question, as_user=people["alice"], role="requester", data={"output": "Porto"})
    assert (done.state, done.text) == ("completed", "Booked.")


@pytest.mark.django_db(transaction=True)
def test_a_script_that_runs_out_fails_the_run_and_says_why() -> None:
    with ScriptedModel(call("whoami")):
        failed = run_task("who am I?")
    assert failed.state == "failed"
    assert "the scripted model was asked for turn 2, but its script has 1 step(s)" in str(
        failed.cause
    )


@pytest.mark.django_db(transaction=True)
def test_the_scripted_model_is_the_client_only_inside_its_block(settings: Any) -> None:
    before = settings.TOOLNEXUS
    with ScriptedModel() as script:
        assert settings.TOOLNEXUS == {**before, "CLIENT": script}
    assert settings.TOOLNEXUS == before


@pytest.mark.django_db
def test_the_helpers_refuse_a_test_inside_a_transaction() -> None:
    with ScriptedModel(say("hi")), pytest.raises(RuntimeError, match="TransactionTestCase"):
        run_task("hello")
    with pytest.raises(RuntimeError, match="transaction=True"):
        answer("any-task")
