"""An admin that leads to the answer (Django's test client; the same in
chromium: tests/admin/test_browser_tutorial.py):

* a decision — on the review page or in bulk — flashes a message linking to
  the Task's own page;
* that page opens with what the Task came to — its state, the request, the
  answer or the failure, each decision with who and when — before any JSON,
  which is folded; for every state, escaped;
* the admin index lists the review queue first, and push and MCP only when
  those features are on;
* the demo's ``/`` says where to go.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse
from toolnexus import Answer

from tests.corpus import xss
from tests.utils import approval, task_in
from toolnexus_django import review
from toolnexus_django.admin.bulk_actions import MAX_LINKS, follow_links
from toolnexus_django.lifecycle import Verdict
from toolnexus_django.models import AwaitingHumanTask
from toolnexus_django.stores import DjangoTaskStore

pytestmark = pytest.mark.django_db

QUEUE = "admin:toolnexus_django_awaitinghumantask_changelist"
REVIEW = "admin:toolnexus_django_awaitinghumantask_review"
RECORD = "admin:toolnexus_django_taskrecord_change"
REQUEST = "Please file my taxi from the airport: 42.50."
ANSWER = "Your taxi expense is filed: EXP-7, 42.50 under travel."


def body_of(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return str(response.content.decode())


def outcome_of(page: str) -> str:
    """The summary block at the top of a Task's page (its HTML)."""
    start = page.index(">", page.index('id="tnx-outcome"')) + 1
    return page[start : page.index("</table>", start)]


def text_of(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def flashed(client: Client, response: Any) -> list[tuple[str, str]]:
    """The messages the redirect's next page shows (as HTML), by level."""
    assert response.status_code == 302, response.status_code
    page = client.get(response.url)
    return [(m.level_tag, str(m)) for m in page.context["messages"]]


# -- the decision's message ---------------------------------------------------------------


def test_approving_on_the_review_page_links_to_the_task(admin_client: Client) -> None:
    task = task_in("input-required", text=REQUEST, store=DjangoTaskStore(), request=approval("r-1"))
    posted = admin_client.post(
        reverse(REVIEW, args=[task["id"]]), {"_answer": "approve", "request_id": "r-1"}
    )
    assert posted.url == reverse(QUEUE)  # back to the queue, to review the next one
    [(level, said)] = flashed(admin_client, posted)
    assert level == "success"
    assert text_of(said).startswith("Answered “Approve?” (approve); the task resumes")
    link = f'<a href="{reverse(RECORD, args=[task["id"]])}" class="tnx-task-link">'
    assert link in said and "Follow the task to its answer</a>" in said


@pytest.mark.parametrize(
    ("action", "fields"),
    [("decline", {"reason": "declined"}), ("reply", {"data": '{"cost_center": "travel"}'})],
)
def test_every_answer_on_the_review_page_links_to_the_task(
    admin_client: Client, action: str, fields: dict[str, str]
) -> None:
    task = task_in("input-required", store=DjangoTaskStore(), request=approval("r-1"))
    data = {"_answer": action, "request_id": "r-1", f"{action}-comment": "checked"}
    data.update({f"{action}-{name}": value for name, value in fields.items()})
    posted = admin_client.post(reverse(REVIEW, args=[task["id"]]), data)
    [(level, said)] = flashed(admin_client, posted)
    assert level == "success"
    assert f'href="{reverse(RECORD, args=[task["id"]])}"' in said


def test_a_hostile_prompt_in_the_message_stays_text(admin_client: Client) -> None:
    prompt = xss.text("pr", range(len(xss.PAYLOADS)))
    task = task_in(
        "input-required",
        store=DjangoTaskStore(),
        request={"id": "r-1", "kind": "approval", "prompt": prompt},
    )
    posted = admin_client.post(
        reverse(REVIEW, args=[task["id"]]), {"_answer": "approve", "request_id": "r-1"}
    )
    page = admin_client.get(posted.url).content.decode()
    assert xss.survivors(page) == set()
    messages = page[page.index('class="messagelist"') :]
    assert "tnxpr00" in html.unescape(messages)  # shown, as text (cut at 80 characters)
    assert f'href="{reverse(RECORD, args=[task["id"]])}"' in messages


def test_bulk_approval_links_to_each_task_it_answered(admin_client: Client) -> None:
    store = DjangoTaskStore()
    waiting = [task_in("input-required", store=store)["id"] for _ in range(2)]
    posted = admin_client.post(
        reverse(QUEUE),
        {"action": "approve_selected", "_selected_action": waiting, "_confirm": "1"},
    )
    said = dict(flashed(admin_client, posted))
    assert said["success"] == "Approved 2 tasks; their runs resume in the background."
    assert text_of(said["info"]).startswith("Follow them to their answers:")
    for task_id in waiting:
        assert f'href="{reverse(RECORD, args=[task_id])}"' in said["info"]


def test_bulk_links_escape_ids_and_stop_at_a_bound() -> None:
    queue = admin.site._registry[AwaitingHumanTask]
    hostile = [xss.payload("ri", i) for i in range(len(xss.PAYLOADS))]
    links = str(follow_links(queue, hostile))
    assert xss.survivors(f"<p>{links}</p>") == set()
    assert links.count("<a ") == MAX_LINKS
    assert text_of(links).endswith(f"and {len(hostile) - MAX_LINKS} more.")
    assert str(follow_links(queue, ["t-1"])).startswith("Follow it to its answer:")


# -- the Task's page -----------------------------------------------------------------------


STATES = ["submitted", "working", "input-required", "auth-required", "completed", "failed"]
STATES += ["canceled", "rejected"]


def a_task_in(state: str) -> dict[str, Any]:
    store = DjangoTaskStore()
    if state != "rejected":
        result = ANSWER if state == "completed" else "The model could not be reached."
        return task_in(state, text=REQUEST, store=store, result=result)
    # The app never rejects; a Task another server stored may be.
    task = task_in("submitted", text=REQUEST, store=store)
    message = {"kind": "message", "role": "agent", "messageId": "m-2",
               "parts": [{"kind": "text", "text": "I do not file taxis."}]}  # fmt: skip
    store.save({**task, "status": {"state": "rejected", "message": message}})
    return task


@pytest.mark.parametrize("state", STATES)
def test_every_task_page_opens_with_what_the_task_came_to(
    admin_client: Client, state: str
) -> None:
    task = a_task_in(state)
    page = body_of(admin_client, reverse(RECORD, args=[task["id"]]))
    summary = outcome_of(page)
    said = text_of(summary)
    # Before any JSON: the summary comes first, the stored data is folded.
    assert page.index('id="tnx-outcome"') < page.index("field-task_json")
    stored = page[: page.index("field-task_json")]
    assert stored.rfind("<details>") > stored.rfind("</details>")  # inside an open <details>
    assert said.startswith(f"Outcome State {state.replace('-', ' ')}")
    assert f"Request {REQUEST}" in said
    if state == "completed":
        assert f"Answer {ANSWER}" in said
    elif state == "failed":
        assert "Why it ended The model could not be reached." in said
    elif state == "rejected":
        assert "Why it ended I do not file taxis." in said
    elif state == "canceled":
        assert "Why it ended The task was canceled" in said
    elif state in ("input-required", "auth-required"):
        assert "Waiting for Approve?" in said
        assert reverse(REVIEW, args=[task["id"]]) in summary  # where to answer it
    else:
        assert "Answer None yet: the task has not finished." in said
    if state == "canceled":  # by its requester, over A2A
        assert "Decision canceled by anonymous caller (user)" in said
    else:
        assert "Decision None: no person has decided anything on this task." in said


def test_the_decision_says_who_made_it_when_and_why(admin_client: Client) -> None:
    store = DjangoTaskStore()
    task = task_in("input-required", text=REQUEST, store=store, request=approval("r-1"))
    review.answer(
        store,
        task,
        Verdict(
            Answer(id="r-1", ok=False, reason="declined"),
            decision="decline",
            actor="rita",
            comment="Not a <b>taxi</b> receipt.",
        ),
    )
    page = body_of(admin_client, reverse(RECORD, args=[task["id"]]))
    summary = outcome_of(page)
    row = summary.index(">", summary.index('id="tnx-outcome-decisions"')) + 1
    decision = text_of(summary[row:])
    assert re.search(
        r"^Decision declined by rita \(user\) ?, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d "
        r"— “Not a <b>taxi</b> receipt.” Read its review",
        decision,
    ), decision
    assert "Not a &lt;b&gt;taxi&lt;/b&gt; receipt." in summary  # escaped
    assert re.search(r'<time datetime="\d{4}-\d\d-\d\dT', summary)


def test_a_completed_task_shows_its_answer_before_any_json(admin_client: Client) -> None:
    task = task_in("completed", text=REQUEST, store=DjangoTaskStore(), result=ANSWER)
    page = body_of(admin_client, reverse(RECORD, args=[task["id"]]))
    answer_at = page.index('id="tnx-outcome-answer"')
    assert ANSWER in text_of(page[answer_at : page.index("</tr>", answer_at)])
    # The answer is also in the JSON dump, but only after it.
    assert page.index(ANSWER) > page.index('id="tnx-outcome"')
    assert page.index(ANSWER) < page.index("field-task_json")


def test_hostile_texts_in_the_summary_stay_text(admin_client: Client) -> None:
    every = range(len(xss.PAYLOADS))
    store = DjangoTaskStore()
    asked = xss.text("in", every)
    done = task_in("completed", text=asked, result=xss.text("at", every), store=store)
    failed = task_in("failed", text=asked, result=xss.text("fr", every), store=store)
    for task in (done, failed):
        page = body_of(admin_client, reverse(RECORD, args=[task["id"]]))
        assert xss.survivors(page) == set()
        shown = html.unescape(outcome_of(page))
        assert xss.payload("in", 1) in shown  # written out, as text
    assert xss.payload("at", 1) in html.unescape(
        outcome_of(body_of(admin_client, reverse(RECORD, args=[done["id"]])))
    )


def test_the_summary_asks_nothing_of_a_task_without_history(admin_client: Client) -> None:
    # A Task stored by another server: no private section, a bare status.
    DjangoTaskStore().save({"id": "bare-1", "status": {"state": "completed"}})
    said = text_of(outcome_of(body_of(admin_client, reverse(RECORD, args=["bare-1"]))))
    assert said.startswith("Outcome State completed")
    assert "Request \u2013" in said and "Answer \u2013" in said  # a dash: nothing to show


# -- the admin index -----------------------------------------------------------------------


def models_listed(page: str, app_label: str = "toolnexus_django") -> list[str]:
    """The model entries of the app's block on an admin index, in order."""
    start = page.index(f'class="app-{app_label} module')
    block = page[start : page.index("</table>", start)]
    return re.findall(r'<tr class="model-(\w+)', block)


@pytest.mark.parametrize("url", ["admin:index", "admin:app_list"])
def test_the_index_lists_the_queue_first(admin_client: Client, url: str) -> None:
    args = ["toolnexus_django"] if url == "admin:app_list" else []
    page = body_of(admin_client, reverse(url, args=args))
    listed = models_listed(page)
    assert listed[0] == "awaitinghumantask"
    assert ">Awaiting a human</a>" in page
    # The app's block is the first of the index, so the queue is its first link.
    first_app = re.search(r'class="app-(\w+) module', page)
    assert first_app is not None and first_app.group(1) == "toolnexus_django"


def test_push_and_mcp_are_listed_only_when_on(admin_client: Client, configure: Any) -> None:
    configure(None, store="memory")  # MCP off (the default), push configs not in the database
    listed = models_listed(body_of(admin_client, reverse("admin:index")))
    assert listed == ["awaitinghumantask", "taskdashboard", "taskdecision", "taskrecord"]
    # Off is not gone: the pages still open, for rows written while it was on.
    assert admin_client.get(reverse("admin:toolnexus_django_mcpcall_changelist")).status_code == 200

    configure(None, store="django", MCP={"tools": "__all__"})
    listed = models_listed(body_of(admin_client, reverse("admin:index")))
    assert listed[0] == "awaitinghumantask"
    assert set(listed) == {
        "awaitinghumantask", "mcpcall", "pushdelivery", "pushconfig", "taskdecision", "taskrecord",
        "taskdashboard",
    }  # fmt: skip


# -- the demo's front page -----------------------------------------------------------------


def test_the_demo_root_says_where_to_go() -> None:
    page = Client().get("/")
    assert page.status_code == 200
    body = page.content.decode()
    for target in (
        reverse("admin:index"),
        reverse(QUEUE),
        reverse("toolnexus_django:agent-card"),
        "http://testserver" + reverse("toolnexus_django:rpc"),
    ):
        assert target in body
    assert "python manage.py createsuperuser" in body
