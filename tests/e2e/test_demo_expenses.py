"""The demo's own tools on its own data (testproject/expenses), tested the
way the README's "Writing tools" tells a project to test its tools: with
``toolnexus_django.testing`` — a scripted model, the Task run in-process to
its Request, answered as a reviewer — on a database whose transactions
commit (the tools run on their own threads and connections)."""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from testproject.expenses.models import Expense
from toolnexus_django.testing import ScriptedModel, answer, call, run_task, say

pytestmark = pytest.mark.django_db(transaction=True)

CLAIM = "file an expense of 42 for a taxi"


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
    """alice and bob (requesters) and rita (reviewer), as manage.py demo_users makes them."""
    call_command("demo_users", stdout=io.StringIO())
    return {u.username: u for u in get_user_model().objects.all()}


def file_and_approve(requester: Any, reviewer: Any) -> Expense:
    with ScriptedModel(call("file_expense", amount=42, description="a taxi"), say("Filed.")):
        waiting = run_task(CLAIM, owner=requester)
        assert waiting.state == "input-required"
        done = answer(waiting, as_user=reviewer, data={"cost_center": "travel"})
    assert done.state == "completed", done
    return Expense.objects.get(task_id=done.task_id)


def test_an_approved_claim_is_a_row_of_the_requester_shown_in_the_admin(
    people: dict[str, Any],
) -> None:
    script = ScriptedModel(call("file_expense", amount=42, description="a taxi"), say("Filed."))
    with script:
        waiting = run_task(CLAIM, owner=people["alice"])
        assert waiting.state == "input-required"
        assert waiting.text == "Approve an expense claim of 42.00 for 'a taxi'?"
        assert waiting.request is not None and waiting.request.kind == "approval"
        assert not Expense.objects.exists()  # nothing filed before a reviewer says yes

        done = answer(waiting, as_user=people["rita"], data={"cost_center": "travel"})

    assert (done.state, done.text) == ("completed", "Filed.")
    expense = Expense.objects.get()
    assert expense.owner == people["alice"]
    assert (expense.amount, expense.description) == (Decimal("42.00"), "a taxi")
    assert (expense.cost_center, expense.approved_by, expense.task_id) == (
        "travel",
        "rita",
        done.task_id,
    )
    # The model read the tool's result, naming the new row.
    assert script.turns[1].messages[-1]["content"] == (
        f"Filed expense claim EXP-{expense.pk}: 42.00 under travel, approved by rita."
    )

    reviewer = Client()
    reviewer.force_login(people["rita"])
    page = reviewer.get("/admin/expenses/expense/")
    assert page.status_code == 200
    row = page.content.decode()
    assert f"EXP-{expense.pk}: 42.00 for a taxi" in row and ">alice<" in row


def test_my_expenses_lists_only_the_requesters_own_claims(people: dict[str, Any]) -> None:
    filed = file_and_approve(people["alice"], people["rita"])

    def listed(owner: Any) -> str:
        """What my_expenses told the model on ``owner``'s run."""
        with ScriptedModel(call("my_expenses"), say("Here they are.")) as script:
            assert run_task("show my expenses", owner=owner).state == "completed"
        return str(script.turns[1].messages[-1]["content"])

    assert listed(people["bob"]) == "You have no expense claims."
    assert listed(people["alice"]) == f"EXP-{filed.pk}: 42.00 for a taxi (travel)"


def test_an_anonymous_caller_is_not_offered_the_tools_that_act_as_someone(
    people: dict[str, Any],
) -> None:
    script = ScriptedModel(say("hello"), say("hello"), say("hello"))
    nobody = get_user_model().objects.create_user("nobody", password="x")
    with script:
        run_task(CLAIM)  # anonymous
        run_task(CLAIM, owner=nobody)  # signed in, no expense permission
        run_task(CLAIM, owner=people["alice"])
    anonymous, unprivileged, requester = script.offered
    assert {"file_expense", "my_expenses"}.isdisjoint(anonymous)
    assert {"file_expense", "my_expenses"}.isdisjoint(unprivileged)
    assert {"file_expense", "my_expenses"} <= requester
    assert {"ask_requester", "pay_supplier"} <= anonymous  # they need no permission
