"""Who may answer a Request and what an answer must look like — the rules of
``review.answer_task``, without a server."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from toolnexus import Answer

from testproject.demo import APPROVAL_SCHEMA, DETAILS_SCHEMA
from tests.utils import decisions_of, halted_transcript, task_in
from toolnexus_django.compat import TASKS_MODULE
from toolnexus_django.lifecycle.requests import REVIEWER_NOTE
from toolnexus_django.review import (
    AnswerRefused,
    answer_task,
    answerers_for,
    check_answer_data,
)
from toolnexus_django.stores import get_task_store
from toolnexus_django.stores.base import state_of

pytestmark = pytest.mark.django_db

REVIEWER_ONLY = ("reviewer",)
EITHER = ("reviewer", "requester")


def request(kind: str, **data: Any) -> dict[str, Any]:
    return {"id": f"{kind}-1", "kind": kind, "prompt": "?", "data": data or None}


@pytest.fixture
def waiting(settings: Any) -> Any:
    """``waiting(kind, tool=..., **data)``: a Task in input-required on a
    Request of ``kind`` made by ``tool``, in the memory store; resumes are
    enqueued on Django's dummy Tasks backend (recorded, never run)."""
    settings.TASKS = {
        **settings.TASKS,
        "dummy": {"BACKEND": f"{TASKS_MODULE}.backends.dummy.DummyBackend"},
    }
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "STORE": "memory", "TASK_BACKEND": "dummy"}

    def make(kind: str, tool: str = "file_expense", **data: Any) -> dict[str, Any]:
        return task_in(
            "input-required",
            request=request(kind, **data),
            transcript=halted_transcript(tool),
        )

    return make


# -- who may answer ---------------------------------------------------------------------


def test_approvals_and_authorizations_are_for_reviewers_everything_else_for_both() -> None:
    assert answerers_for(request("approval")) == REVIEWER_ONLY
    assert answerers_for(request("authorization")) == REVIEWER_ONLY
    for kind in ("input", "question", "anything-else"):
        assert answerers_for(request(kind)) == EITHER


def test_the_setting_decides_per_kind_and_keeps_the_other_defaults(settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "ANSWERERS": {"input": "reviewer"}}
    assert answerers_for(request("input")) == REVIEWER_ONLY
    assert answerers_for(request("approval")) == REVIEWER_ONLY
    assert answerers_for(request("question")) == EITHER


def test_a_tool_narrows_or_widens_for_its_own_requests(settings: Any) -> None:
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "TOOL_ANSWERERS": {"file_expense": ["requester"], "ask_requester": "reviewer"},
    }
    assert answerers_for(request("approval"), "file_expense") == ("requester",)
    assert answerers_for(request("input"), "ask_requester") == REVIEWER_ONLY
    assert answerers_for(request("approval"), "other_tool") == REVIEWER_ONLY


def test_the_requests_own_answerers_apply_unless_the_operator_decided(settings: Any) -> None:
    widened = request("approval", answerers=["requester", "reviewer"])
    assert answerers_for(widened, "some_tool") == EITHER
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "TOOL_ANSWERERS": {"some_tool": "reviewer"}}
    assert answerers_for(widened, "some_tool") == REVIEWER_ONLY
    # Nonsense there is ignored: the kind's rule applies.
    assert answerers_for(request("approval", answerers="anyone"), None) == REVIEWER_ONLY


# -- what an answer must look like ---------------------------------------------------------


def test_data_is_checked_a_decline_and_a_bare_approval_are_not() -> None:
    approval = request("approval", schema=APPROVAL_SCHEMA)
    bad = Answer(id="x", ok=True, data={"cost_center": "yachts", "approved_amount": "lots"})
    assert [v["path"] for v in check_answer_data(approval, bad)] == [
        "/approved_amount",
        "/cost_center",
    ]
    good = Answer(id="x", ok=True, data={"cost_center": "travel"})
    assert check_answer_data(approval, good) == []
    assert check_answer_data(approval, Answer(id="x", ok=True)) == []
    assert check_answer_data(approval, Answer(id="x", ok=False, reason="declined")) == []
    details = request("input", schema=DETAILS_SCHEMA)
    assert check_answer_data(details, Answer(id="x", ok=True, data={"output": "Lisbon"})) == []
    assert check_answer_data(details, Answer(id="x", ok=True, data={})) != []


def test_a_broken_schema_accepts_no_data() -> None:
    broken = request("input", schema={"type": "objekt"})
    [violation] = check_answer_data(broken, Answer(id="x", ok=True, data={"a": 1}))
    assert "schema is invalid" in violation["message"]


# -- answer_task ---------------------------------------------------------------------------


def test_the_requester_is_refused_a_reviewers_request_and_nothing_changes(waiting: Any) -> None:
    task = waiting("approval", schema=APPROVAL_SCHEMA)
    before = get_task_store().get(task["id"])
    with pytest.raises(AnswerRefused) as refused:
        answer_task(
            task["id"], Answer(id="approval-1", ok=True), decision="message", role="requester"
        )
    assert refused.value.reason == "not-allowed"
    assert "A reviewer must answer this request" in str(refused.value)
    assert get_task_store().get(task["id"]) == before


def test_a_reviewer_needs_the_answer_permission(waiting: Any, django_user_model: Any) -> None:
    task = waiting("approval")
    clerk = django_user_model.objects.create_user("clerk", password="x")
    with pytest.raises(AnswerRefused) as refused:
        answer_task(task["id"], Answer(id="approval-1", ok=True), decision="approve", user=clerk)
    assert refused.value.reason == "not-permitted"

    clerk.user_permissions.add(Permission.objects.get(codename="answer_task"))
    clerk = django_user_model.objects.get(pk=clerk.pk)  # a fresh permission cache
    working = answer_task(
        task["id"], Answer(id="approval-1", ok=True), decision="approve", user=clerk
    )
    assert state_of(working) == "working"
    assert decisions_of(task["id"])[-1]["actor"] == "clerk"
    assert decisions_of(task["id"])[-1]["role"] == "reviewer"


def test_a_requester_only_request_refuses_reviewers(waiting: Any, settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "TOOL_ANSWERERS": {"ask_requester": "requester"}}
    task = waiting("input", tool="ask_requester")
    with pytest.raises(AnswerRefused, match="Only the requester"):
        answer_task(task["id"], Answer(id="input-1", ok=True, data={}), decision="reply")
    done = answer_task(
        task["id"], Answer(id="input-1", ok=True, data={}), decision="message", role="requester"
    )
    assert state_of(done) == "working"


def test_data_that_breaks_the_schema_is_refused_with_the_violations(waiting: Any) -> None:
    task = waiting("input", tool="ask_requester", schema=DETAILS_SCHEMA)
    with pytest.raises(AnswerRefused) as refused:
        answer_task(
            task["id"],
            Answer(id="input-1", ok=True, data={"output": 3}),
            decision="message",
            role="requester",
        )
    assert refused.value.reason == "invalid"
    assert refused.value.violations == [{"path": "/output", "message": "3 is not of type 'string'"}]
    assert state_of(get_task_store().get(task["id"])) == "input-required"


def test_expiry_answers_whatever_the_rules(waiting: Any) -> None:
    task = waiting("approval")
    expired = answer_task(
        task["id"],
        Answer(id="approval-1", ok=False, reason="expired"),
        decision="expire",
        role="system",
        via="expiry",
    )
    assert state_of(expired) == "working"


def test_the_status_says_who_answers_and_what_an_answer_looks_like(waiting: Any) -> None:
    task = waiting("approval", schema=APPROVAL_SCHEMA)
    parts = task["status"]["message"]["parts"]
    assert [p["kind"] for p in parts] == ["text", "text", "data"]
    assert parts[1]["text"] == REVIEWER_NOTE
    assert parts[2]["data"] == {
        "request": {"kind": "approval", "answeredBy": ["reviewer"], "schema": APPROVAL_SCHEMA}
    }
    either = waiting("input", tool="ask_requester")
    assert [p["kind"] for p in either["status"]["message"]["parts"]] == ["text", "data"]
