"""The admin reads like a person wrote it (issue 35): what a reviewer on their
first day stumbled on, each checked with Django's test client — the queue's
question opens the review page, people are named by their usernames (and
linked for whoever may see users), a plain approval asks for a yes or a no,
and the demo's expense claim names the Task that filed it."""

from __future__ import annotations

import html
import re
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from django.urls import reverse
from toolnexus import Answer

from testproject.expenses.models import Expense
from tests.admin.test_review_admin import (  # noqa: F401 (fixtures: pytest looks them up by name)
    QUEUE,
    RECORD,
    REVIEW,
    reviewer,
    reviewer_client,
    staff,
)
from tests.review.test_review_team import EXPENSE_SCHEMA, client_for, waiting_expense
from tests.utils import approval, pending_id, task_in
from toolnexus_django.review import answer_task

pytestmark = pytest.mark.django_db

USER_PAGE = "admin:auth_user_change"


def who(body: str, kind: str) -> tuple[str, list[str]]:
    """The Who cell (the fourth) of the timeline row of event ``kind``: its
    text, and the links in it."""
    row = re.search(rf'<tr class="tnx-event tnx-event-{kind}">(.*?)</tr>', body, re.S)
    assert row, f"no {kind} row"
    cell = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)[3]
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cell)).split())
    return text, re.findall(r'href="([^"]+)"', cell)


# -- the queue ------------------------------------------------------------------------------


def test_the_queue_question_is_a_link_to_its_review_page(
    reviewer_client: Client,  # noqa: F811
) -> None:
    request = approval("approve-ask", tool="file_expense")
    request["prompt"] = "Approve <b>42.50</b> for a taxi & a tip?"
    task_id = task_in("input-required", request=request)["id"]
    body = reviewer_client.get(reverse(QUEUE)).content.decode()
    review = reverse(REVIEW, args=[quote(task_id)])
    # Escaped as ever: the prompt is the model's words, never HTML.
    assert (
        f'<a href="{review}" class="tnx-prompt-link">'
        "Approve &lt;b&gt;42.50&lt;/b&gt; for a taxi &amp; a tip?</a>"
    ) in body


# -- who made each move ---------------------------------------------------------------------


@pytest.fixture
def answered(django_user_model: Any) -> dict[str, Any]:
    """alice's expense, approved by rita with a comment: its id and the people."""
    alice = django_user_model.objects.create_user("alice", password="pw")
    rita = staff(django_user_model, "rita", "answer_task")
    task_id = waiting_expense(owner=str(alice.pk))
    answer_task(
        task_id, Answer(id=pending_id(task_id), ok=True), decision="approve", user=rita,
        comment="Receipt checked.",
    )  # fmt: skip
    return {"id": task_id, "alice": alice, "rita": rita}


def test_the_timeline_names_people_by_username_and_an_anonymous_caller_as_such(
    answered: dict[str, Any], django_user_model: Any
) -> None:
    # May read Tasks, not users: names, no links.
    vic = client_for(staff(django_user_model, "vic", "view_taskrecord"))
    body = vic.get(reverse(RECORD, args=[answered["id"]])).content.decode()
    assert who(body, "submit") == ("alice (user) via a2a", [])
    assert who(body, "answer") == ("rita (user) via admin", [])
    anonymous = waiting_expense(owner=None)
    body = vic.get(reverse(RECORD, args=[anonymous])).content.decode()
    assert who(body, "submit") == ("anonymous caller (user) via a2a", [])


def test_a_viewer_who_may_see_users_follows_each_name_to_the_users_page(
    answered: dict[str, Any], django_user_model: Any
) -> None:
    uma = client_for(staff(django_user_model, "uma", "view_taskrecord", "view_user"))
    alice, rita = (reverse(USER_PAGE, args=[answered[n].pk]) for n in ("alice", "rita"))
    body = uma.get(reverse(RECORD, args=[answered["id"]])).content.decode()
    assert who(body, "submit") == ("alice (user) via a2a", [alice])
    assert who(body, "answer") == ("rita (user) via admin", [rita])
    # The answered Task's review page: its timeline, and who decided.
    review = uma.get(reverse(REVIEW, args=[answered["id"]])).content.decode()
    assert who(review, "submit") == ("alice (user) via a2a", [alice])
    assert f'<td><a href="{rita}" class="tnx-user">rita</a></td>' in review


# -- a plain approval -----------------------------------------------------------------------


def test_a_plain_approval_asks_for_a_yes_or_a_no_with_a_comment(
    reviewer_client: Client,  # noqa: F811
) -> None:
    task_id = waiting_expense()  # no data schema: a plain approval
    body = reviewer_client.get(reverse(REVIEW, args=[task_id])).content.decode()
    assert 'id="tnx-approve-form"' in body and 'id="tnx-decline-form"' in body
    assert 'name="approve-comment"' in body and 'name="decline-comment"' in body
    assert 'id="tnx-reply-form"' not in body and 'name="reply-data"' not in body
    assert "Reply with data" not in body and ">null</textarea>" not in body
    # One with a data schema keeps the reply form generated from it.
    task_id = task_in("input-required", request=approval("r-schema", schema=EXPENSE_SCHEMA))["id"]
    body = reviewer_client.get(reverse(REVIEW, args=[task_id])).content.decode()
    assert 'id="tnx-reply-form"' in body and 'name="reply-amount"' in body


# -- the demo's expense claims --------------------------------------------------------------


def test_an_expense_names_the_task_that_filed_it_read_only_and_linked(
    admin_client: Client, admin_user: Any
) -> None:
    task_id = task_in("completed")["id"]
    expense = Expense.objects.create(
        owner=admin_user, amount=Decimal("42.50"), description="a taxi", task_id=task_id
    )
    task_page = reverse(RECORD, args=[quote(task_id)])
    change = admin_client.get(
        reverse("admin:expenses_expense_change", args=[expense.pk])
    ).content.decode()
    assert f'<a href="{task_page}" title="{task_id}">{task_id}</a>' in change
    assert 'name="task_id"' not in change  # not a text box to edit
    listing = admin_client.get(reverse("admin:expenses_expense_changelist")).content.decode()
    assert f'<a href="{task_page}" title="{task_id}">{task_id[:12]}…</a>' in listing


def test_the_owner_filter_offers_anonymous_callers_only_when_one_is_waiting(
    reviewer_client: Client,  # noqa: F811
    django_user_model: Any,
) -> None:
    alice = django_user_model.objects.create_user("alice-owner", password="pw")
    task_in("input-required", request=approval("a"), owner=str(alice.pk))
    body = reviewer_client.get(reverse(QUEUE)).content.decode()
    assert "?owner=" + str(alice.pk) in body
    assert "owner=anonymous" not in body  # an endpoint that signs everyone in has none

    task_in("input-required", request=approval("b"))  # an anonymous caller's
    body = reviewer_client.get(reverse(QUEUE)).content.decode()
    assert "owner=anonymous" in body
