"""The demo's amounts stay within what its model holds (issue 29, item 11: a
reviewer's edited amount, or a reply's ``approved_amount``, of 1e9 was
stored past ``Expense.amount``'s ``max_digits`` and the Expense admin list
then answered 500 for everyone, on SQLite).

A reply's amount is bounded by the approval's schema: the review page's form
refuses it and the Task still waits. An amount that reaches the tool anyway
(an edited argument; a reply the schema lets through but the row cannot
hold) is a tool error the model reads, and no row is written. Run in-process
with ``toolnexus_django.testing``, answered in the admin over the test client."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from testproject.expenses.models import Expense
from toolnexus_django.models import TaskRecord
from toolnexus_django.testing import AnswerRefused, ScriptedModel, answer, call, run_task, say

pytestmark = pytest.mark.django_db(transaction=True)

CLAIM = "file an expense of 42 for a taxi"
TOO_MUCH = 1e9


@pytest.fixture(autouse=True)
def demo_toolkit(settings: Any) -> None:
    """The demo's own tools (the suite runs on the example agent: tests/conftest.py)."""
    tools = settings.DEMO_AGENTS["expenses"]["tools"]
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "TOOLKIT": {**settings.TOOLNEXUS["TOOLKIT"], "tools": tools},
    }


@pytest.fixture
def people() -> dict[str, Any]:
    """alice (requester) and rita (reviewer), as manage.py demo_users makes them."""
    call_command("demo_users", stdout=io.StringIO())
    return {u.username: u for u in get_user_model().objects.all()}


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def tool_result(script: ScriptedModel) -> str:
    """What the tool told the model (the last message of its second turn)."""
    return str(script.turns[1].messages[-1]["content"])


def test_the_review_page_refuses_a_reply_past_what_a_claim_holds(people: dict[str, Any]) -> None:
    with ScriptedModel(call("file_expense", amount=42, description="a taxi"), say("Filed.")):
        waiting = run_task(CLAIM, owner=people["alice"])
    assert waiting.state == "input-required" and waiting.request is not None
    review = reverse("admin:toolnexus_django_awaitinghumantask_review", args=[waiting.task_id])
    form = {
        "_answer": "reply",
        "request_id": waiting.request.id,
        "reply-cost_center": "travel",
        "reply-approved_amount": str(TOO_MUCH),
    }
    page = signed_in(people["rita"]).post(review, form)
    assert page.status_code == 200  # the page again, with the form's error
    errors = page.context["forms"]["reply"].errors
    assert "approved_amount" in errors, errors
    assert TaskRecord.objects.get(pk=waiting.task_id).state == "input-required"
    assert not Expense.objects.exists()
    # The Python API (and an A2A reply) checks the same schema.
    with pytest.raises(AnswerRefused) as refused:
        answer(
            waiting,
            as_user=people["rita"],
            data={"cost_center": "travel", "approved_amount": TOO_MUCH},
        )
    assert refused.value.reason == "invalid"


def test_an_edited_amount_past_what_a_claim_holds_is_a_tool_error(
    people: dict[str, Any],
) -> None:
    script = ScriptedModel(
        call("file_expense", amount=42, description="a taxi"), say("It was not filed.")
    )
    with script:
        waiting = run_task(CLAIM, owner=people["alice"])
        edited = {"amount": TOO_MUCH, "description": "a taxi"}
        done = answer(waiting, as_user=people["rita"], arguments=edited)
    # The list every reviewer reads (it answered 500 with such a row on SQLite).
    listing = signed_in(people["rita"]).get("/admin/expenses/expense/")
    assert listing.status_code == 200
    assert not Expense.objects.exists()
    assert (done.state, done.text) == ("completed", "It was not filed.")
    assert tool_result(script).startswith("the amount must be a number from 0.01 to 99999999.99")


def test_an_amount_the_schema_lets_through_but_rounds_to_nothing_is_a_tool_error(
    people: dict[str, Any],
) -> None:
    script = ScriptedModel(
        call("file_expense", amount=42, description="a taxi"), say("It was not filed.")
    )
    with script:
        waiting = run_task(CLAIM, owner=people["alice"])
        data = {"cost_center": "travel", "approved_amount": 0.001}  # > 0: the schema's fine
        assert answer(waiting, as_user=people["rita"], data=data).state == "completed"
    assert tool_result(script) == "the amount must be at least 0.01, not 0.001"
    assert not Expense.objects.exists()
