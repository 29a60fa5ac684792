"""Segregation of duties (issue 18, item 11: a reviewer approved, in the
admin, the approval Request of a Task they had sent over A2A).

A reviewer who sent a Task does not answer, as a reviewer, a Request of it
that only a reviewer may answer — not on the review page, not in bulk, not as
a four-eyes first approval, not with edited arguments, not from code, not
by claiming it — and the admin says so before they try. Where the requester
may answer (an ``input`` question, or a tool whose Requests the operator
gave to the requester), they still may. ``REVIEW["ALLOW_SELF_APPROVAL"]``
turns the rule off, and ``manage.py check`` then warns (W011).

The Tasks are made with the lifecycle's own verbs, owned by the reviewer as
an authenticated A2A send makes them (the last test sends one for real)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.urls import reverse
from toolnexus import Answer

from tests.admin.test_review_admin import flashed
from tests.conftest import RpcClient, basic
from tests.fakes import FakeLLM, Text, ToolCall
from tests.review.test_review_team import client_for, waiting_expense
from tests.utils import decisions_of, events_of, halted_transcript, pending_id, task_in
from toolnexus_django.models import TaskRecord
from toolnexus_django.review import AnswerRefused, answer_task
from toolnexus_django.review.bulk import decide_many
from toolnexus_django.review.holds import hold_task
from toolnexus_django.review.reviewers import OWN_REQUEST

pytestmark = pytest.mark.django_db

QUEUE = "admin:toolnexus_django_awaitinghumantask_changelist"
REVIEW = "admin:toolnexus_django_awaitinghumantask_review"
NEXT = "admin:toolnexus_django_awaitinghumantask_next"


def reviewer(django_user_model: Any, name: str) -> Any:
    """A staff user with ``answer_task`` (password "<name>-pw")."""
    user = django_user_model.objects.create_user(name, password=f"{name}-pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="answer_task"))
    return django_user_model.objects.get(pk=user.pk)


@pytest.fixture
def rita(django_user_model: Any) -> Any:
    """A reviewer who also sends Tasks."""
    return reviewer(django_user_model, "rita")


@pytest.fixture
def sam(django_user_model: Any) -> Any:
    return reviewer(django_user_model, "sam")


def hers(rita: Any, text: str = "file my taxi") -> str:
    """An expense approval rita sent (she owns the Task)."""
    return waiting_expense(text, owner=str(rita.pk))


def approve(task_id: str, user: Any, **kw: Any) -> Any:
    return answer_task(
        task_id, Answer(id=pending_id(task_id), ok=True), decision="approve", user=user, **kw
    )


def unchanged(task_id: str, events: int) -> bool:
    task = TaskRecord.objects.get(pk=task_id)
    return task.state == "input-required" and len(events_of(task_id)) == events


def allow_self_approval(settings: Any) -> None:
    review = {**settings.TOOLNEXUS.get("REVIEW", {}), "ALLOW_SELF_APPROVAL": True}
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": review}


# -- from code ------------------------------------------------------------------------------


def test_the_requester_cannot_answer_their_own_approval_from_code(rita: Any, sam: Any) -> None:
    task_id = hers(rita)
    events = len(events_of(task_id))
    request_id = pending_id(task_id)
    moves = {
        "approve": lambda: approve(task_id, rita),
        "edit": lambda: approve(
            task_id, rita, arguments={"amount": 1.0, "description": "Taxi to the airport"}
        ),
        "decline": lambda: answer_task(
            task_id,
            Answer(id=request_id, ok=False, reason="declined"),
            decision="decline",
            user=rita,
        ),
        "hold": lambda: hold_task(task_id, rita),
    }
    for move, make in moves.items():
        with pytest.raises(AnswerRefused) as refused:
            make()
        assert (move, refused.value.reason, str(refused.value)) == (
            move,
            "own-request",
            OWN_REQUEST,
        )
        assert unchanged(task_id, events), move

    # Another reviewer can.
    approve(task_id, sam)
    [decision] = decisions_of(task_id)
    assert (decision["decision"], decision["actor"]) == ("approve", "sam")


def test_four_eyes_the_requester_is_neither_approval(settings: Any, rita: Any, sam: Any) -> None:
    review = {**settings.TOOLNEXUS.get("REVIEW", {}), "APPROVALS": {"file_expense": 2}}
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": review}
    task_id = hers(rita)
    events = len(events_of(task_id))
    with pytest.raises(AnswerRefused, match="You sent this request"):
        approve(task_id, rita)
    assert unchanged(task_id, events)
    approve(task_id, sam)  # the first of two
    with pytest.raises(AnswerRefused) as refused:
        approve(task_id, rita)
    assert refused.value.reason == "own-request"
    assert TaskRecord.objects.get(pk=task_id).state == "input-required"


def test_the_requester_still_answers_what_the_requester_may(
    settings: Any, rita: Any, django_user_model: Any
) -> None:
    # An input question: the requester's or a reviewer's (the default).
    question = task_in(
        "input-required", owner=str(rita.pk),
        request={"id": "q-1", "kind": "input", "prompt": "Which dates?", "data": None},
        transcript=halted_transcript("ask_requester"),
    )["id"]  # fmt: skip
    answer_task(question, Answer(id="q-1", ok=True, data={"output": "May 3"}),
                decision="reply", user=rita)  # fmt: skip
    assert decisions_of(question)[0]["actor"] == "rita"
    # An approval of a tool the operator gave to the requester too.
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS, "TOOL_ANSWERERS": {"file_expense": ["requester", "reviewer"]},
    }  # fmt: skip
    task_id = hers(rita)
    approve(task_id, rita)
    assert decisions_of(task_id)[0]["actor"] == "rita"
    # Someone else's Task: the rule is about one's own.
    del settings.TOOLNEXUS["TOOL_ANSWERERS"]
    other = waiting_expense(
        "another's taxi", owner=str(django_user_model.objects.create_user("o").pk)
    )
    approve(other, rita)


# -- in the admin ---------------------------------------------------------------------------


def test_the_review_page_says_it_is_their_own_and_refuses_the_answer(rita: Any, sam: Any) -> None:
    task_id = hers(rita)
    events = len(events_of(task_id))
    client = client_for(rita)
    page = client.get(reverse(REVIEW, args=[task_id])).content.decode()
    assert 'id="tnx-own-request"' in page and "You sent this request" in page
    assert 'name="_answer"' not in page  # no answer forms
    assert "tnx-hold-button" not in page  # nor a hold
    queue = client.get(reverse(QUEUE)).content.decode()
    assert "your own request" in queue
    assert "your own request" not in client_for(sam).get(reverse(QUEUE)).content.decode()

    # A POST anyway (a stale page, a crafted form) is refused, on the page, saying why.
    for action, fields in (
        ("approve", {}),
        ("edit", {"edit-amount": "1", "edit-description": "x"}),
    ):
        posted = client.post(
            reverse(REVIEW, args=[task_id]),
            {"_answer": action, "request_id": pending_id(task_id), **fields}, follow=True,
        )  # fmt: skip
        assert posted.redirect_chain[-1][0] == reverse(REVIEW, args=[task_id])
        assert ("warning", OWN_REQUEST) in flashed(posted)
        assert unchanged(task_id, events)

    # Another reviewer answers it as before.
    answered = client_for(sam).post(
        reverse(REVIEW, args=[task_id]), {"_answer": "approve", "request_id": pending_id(task_id)}
    )
    assert answered.status_code == 302
    assert decisions_of(task_id)[0]["actor"] == "sam"


def test_bulk_approval_leaves_their_own_alone_and_says_so(rita: Any, sam: Any) -> None:
    own, others = hers(rita, "mine"), waiting_expense("theirs", owner=str(sam.pk))
    client = client_for(rita)
    selected = {"action": "approve_selected", "_selected_action": [own, others]}
    confirm = client.post(reverse(QUEUE), selected).content.decode()
    assert "no: you sent it, so another reviewer must answer it" in confirm
    done = client.post(reverse(QUEUE), {**selected, "_confirm": "1", "comment": ""}, follow=True)
    said = flashed(done)
    assert ("success", "Approved 1 task; their runs resume in the background.") in said
    assert any(level == "warning" and "You sent this request" in m for level, m in said)
    assert decisions_of(own) == [] and decisions_of(others)[0]["actor"] == "rita"
    # The same from code: reported as not answered.
    result = decide_many([own], "approve", rita)
    assert (result.answered, result.skipped) == ([], [(own, OWN_REQUEST)])


def test_review_next_skips_their_own(rita: Any, sam: Any) -> None:
    others = waiting_expense("theirs", owner=str(sam.pk))
    hers(rita, "mine")  # newer: first in the queue's order
    assert client_for(rita).get(reverse(NEXT))["Location"] == reverse(REVIEW, args=[others])


# -- the setting ----------------------------------------------------------------------------


def test_with_the_setting_on_they_may_and_manage_py_check_warns(settings: Any, rita: Any) -> None:
    allow_self_approval(settings)
    out, err = io.StringIO(), io.StringIO()
    call_command("check", stdout=out, stderr=err)
    assert "toolnexus_django.W011" in out.getvalue() + err.getvalue()

    task_id = hers(rita)
    client = client_for(rita)
    assert (
        'id="tnx-own-request"' not in client.get(reverse(REVIEW, args=[task_id])).content.decode()
    )
    answered = client.post(
        reverse(REVIEW, args=[task_id]), {"_answer": "approve", "request_id": pending_id(task_id)}
    )
    assert answered.status_code == 302
    assert decisions_of(task_id)[0]["actor"] == "rita"
    approve(hers(rita, "again"), rita)  # and from code


# -- over A2A, for real ---------------------------------------------------------------------


def test_a_reviewer_who_sent_an_approval_over_a2a_cannot_approve_it(
    live_server: Any, configure: Any, fake_llm: FakeLLM, rita: Any, sam: Any
) -> None:
    configure(
        fake_llm,
        AUTHENTICATION_CLASSES=["rest_framework.authentication.BasicAuthentication"],
        PERMISSION_CLASSES=["rest_framework.permissions.IsAuthenticated"],
    )
    fake_llm.push(ToolCall("file_expense", {"amount": 12.5, "description": "taxi"}), Text("Filed."))
    rpc = RpcClient(f"{live_server.url}/agent/", basic("rita"))
    task_id = rpc.send("file my taxi: 12.50")["id"]
    assert rpc.wait(task_id)["status"]["state"] == "input-required"
    assert TaskRecord.objects.get(pk=task_id).owner_id == rita.pk

    posted = client_for(rita).post(
        reverse(REVIEW, args=[task_id]), {"_answer": "approve", "request_id": pending_id(task_id)},
        follow=True,
    )  # fmt: skip
    assert ("warning", OWN_REQUEST) in flashed(posted)
    assert rpc.get(task_id)["result"]["status"]["state"] == "input-required"

    client_for(sam).post(
        reverse(REVIEW, args=[task_id]), {"_answer": "approve", "request_id": pending_id(task_id)}
    )
    done = rpc.wait(task_id, ("completed", "failed"))
    assert done["status"]["state"] == "completed"
    assert decisions_of(task_id)[0]["actor"] == "sam"
