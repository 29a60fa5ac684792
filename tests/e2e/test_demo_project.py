"""The demo as the README's Quick start has a person try it: ``manage.py
demo_users``, then ``toolnexus_serve`` with the demo's own settings (its
expenses toolkit, the offline model), over real HTTP — alice asks for an
expense, rita approves it in the admin, and the claim is a row of alice's
in the admin's Expenses; "my expenses" lists it for alice only; an
anonymous caller cannot file one."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from testproject.expenses.models import Expense
from tests.conftest import RpcClient, basic
from tests.e2e.test_install_pastes import Browser
from tests.servers import serve

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CLAIM = "file an expense of 42 for a taxi"
DONE = ("completed", "failed", "canceled")


def answer_text(task: dict[str, Any]) -> str:
    return str(task["artifacts"][0]["parts"][0]["text"])


def test_the_quick_start_files_an_approved_expense_as_the_requester(tmp_path: Path) -> None:
    call_command("demo_users", stdout=io.StringIO())
    with serve(tmp_path, "--workers", "1", env={"DEMO_AGENT": "expenses"}) as server:
        endpoint = server.wait_ready()["url"]

        anonymous = RpcClient(endpoint)
        refused = anonymous.wait(anonymous.send(CLAIM)["id"], states=DONE)
        assert answer_text(refused).startswith("I cannot file expense claims for you: sign in")

        alice = RpcClient(endpoint, headers=basic("alice"))
        waiting = alice.wait(alice.send(CLAIM)["id"])
        assert waiting["status"]["state"] == "input-required"
        assert waiting["status"]["message"]["parts"][0]["text"].startswith(
            "Approve an expense claim of 42.00 for 'a taxi'?"
        )
        assert not Expense.objects.exists()

        rita = Browser(server.base)
        rita.post(
            "/admin/login/?next=/admin/",
            {"username": "rita", "password": "rita-pw", "next": "/admin/"},
        )
        review = f"/admin/toolnexus_django/awaitinghumantask/{waiting['id']}/review/"
        request_id = re.search(r'name="request_id" value="([^"]+)"', rita.get(review))
        assert request_id, "the review page offers no answer form"
        rita.post(
            review,
            {"_answer": "reply", "request_id": request_id.group(1), "reply-cost_center": "travel"},
        )

        done = alice.wait(waiting["id"], states=DONE)
        expense = Expense.objects.get()
        assert answer_text(done) == (
            f"Done. Filed expense claim EXP-{expense.pk}: 42.00 under travel, approved by rita."
        )
        assert (expense.owner.username, expense.approved_by) == ("alice", "rita")
        changelist = rita.get("/admin/expenses/expense/")
        assert f"EXP-{expense.pk}: 42.00 for a taxi" in changelist and ">alice<" in changelist

        mine = alice.wait(alice.send("show my expenses")["id"], states=DONE)
        assert answer_text(mine) == f"Done. EXP-{expense.pk}: 42.00 for a taxi (travel)"
        bob = RpcClient(endpoint, headers=basic("bob"))
        theirs = bob.wait(bob.send("show my expenses")["id"], states=DONE)
        assert answer_text(theirs) == "Done. You have no expense claims."
