"""The tutorial's examples (docs/tutorial.md), run against the demo served
for real, in the tutorial's order: alice's claim waits for a reviewer, a
reviewer replies in the admin over real HTTP, the claim is an Expense row,
and alice's "show my expenses" lists it (bob's lists nothing)."""

from __future__ import annotations

import re

import pytest

from tests.admin_http import AdminSession
from tests.conftest import RpcClient, basic
from tests.docs.test_examples_clients import demo, example  # noqa: F401 (a fixture)
from tests.servers import Served

pytestmark = pytest.mark.slow

DONE = ("completed", "failed", "canceled")


def test_alices_claim_is_approved_in_the_admin_and_listed_as_hers(demo: Served) -> None:  # noqa: F811
    (waiting,) = example("file_claim.sh", demo)
    task = waiting["result"]
    assert task["status"]["state"] == "input-required"
    assert task["status"]["message"]["parts"][0]["text"] == (
        "Approve an expense claim of 42.00 for 'a taxi'?"
    )

    rita = AdminSession(demo.base).login("rita", "rita-pw")
    review = f"/admin/toolnexus_django/awaitinghumantask/{task['id']}/review/"
    page = rita.get(review).text
    assert "Reply with data" in page and "Send reply" in page
    request_id = re.search(r'name="request_id" value="([^"]+)"', page)
    assert request_id, "the review page offers no answer form"
    rita.post(
        review,
        {"_answer": "reply", "request_id": request_id.group(1), "reply-cost_center": "travel"},
    )

    alice = RpcClient(f"{demo.base}/agent/", headers=basic("alice"))
    done = alice.wait(task["id"], states=DONE)
    answer = done["artifacts"][0]["parts"][0]["text"]
    claim = re.fullmatch(
        r"Done\. Filed expense claim (EXP-\d+): 42\.00 under travel, approved by rita\.", answer
    )
    assert claim, answer
    expenses = rita.get("/admin/expenses/expense/").text
    assert f"{claim.group(1)}: 42.00 for a taxi" in expenses and ">alice<" in expenses

    (mine,) = example("my_expenses.sh", demo)
    assert mine["result"]["status"]["state"] == "completed"
    listed = mine["result"]["artifacts"][0]["parts"][0]["text"]
    assert f"{claim.group(1)}: 42.00 for a taxi (travel)" in listed
    bob = RpcClient(f"{demo.base}/agent/", headers=basic("bob"))
    theirs = bob.wait(bob.send("show my expenses")["id"], states=DONE)
    assert theirs["artifacts"][0]["parts"][0]["text"] == "Done. You have no expense claims."
