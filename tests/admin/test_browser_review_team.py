"""Review at team scale, in a real browser (issue 13): claims and the second
reviewer's warning, bulk approval, edit-then-approve, the queue's filters and
search, the admin log, the read-only page of an answered Task, "… and review
next", four eyes, and the queue at 1280 px with the navigation sidebar open.

Runs are real: the fake LLM over HTTP scripts each Task's model (one keyed
script per Task, so concurrent runs keep apart), the live server takes the
A2A sends, and the background worker resumes each run once it is answered.
Each test saves a screenshot (see :func:`tests.browser.screenshots`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from tests.browser import (  # noqa: F401 (fixtures: pytest looks them up by name in the module)
    MARKS,
    _orm_beside_playwright,
    browser,
    browser_context_args,
    browser_type,
    browser_type_launch_args,
    full_page_screenshot,
    log_in,
    playwright,
    screenshots,
)
from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text, ToolCall
from tests.utils import decisions_of, events_of

pytestmark = MARKS

QUEUE = "/admin/toolnexus_django/awaitinghumantask/"
EXPENSE = "Please file my taxi from the airport to the client's office on Tuesday: 42.50."
TAXI = {"amount": 42.5, "description": "Taxi, airport to client"}
FILED = r"Filed expense claim EXP-\w+: {amount} under {where}\."
INVOICE = "Pay Acme's invoice for the new desks."
PAYMENT = {"supplier": "Acme Office Supplies", "amount": 1250.0}


@pytest.fixture
def rpc(live_server: Any) -> RpcClient:
    # The admin is the point here, not the wire: the WSGI endpoint only (the
    # conftest's rpc runs every test on both servers).
    return RpcClient(f"{live_server.url}/agent/")


@pytest.fixture
def team(django_user_model: Any) -> dict[str, Any]:
    """rita and sam: staff who may answer Tasks (the dedicated permission
    only), each with the password "<name>-pw"."""
    answer = Permission.objects.get(codename="answer_task")
    people = {}
    for name in ("rita", "sam"):
        user = django_user_model.objects.create_user(name, password=f"{name}-pw", is_staff=True)
        user.user_permissions.add(answer)
        people[name] = user
    return people


@pytest.fixture
def agent(configure: Any, fake_llm: FakeLLM) -> FakeLLM:
    configure(fake_llm)
    return fake_llm


def waiting(
    rpc: RpcClient,
    fake: FakeLLM,
    marker: str,
    args: dict[str, Any] | None = None,
    *,
    tool: str = "file_expense",
    text: str = EXPENSE,
    then: str = "Done.",
) -> str:
    """Send ``marker + text`` for real, its model calling ``tool`` with ``args``
    then saying ``then``; the id of the Task once its run waits on a person."""
    fake.on(marker, ToolCall(tool, args if args is not None else TAXI), Text(then))
    task_id = rpc.send(f"[{marker}] {text}")["id"]
    assert rpc.wait(task_id)["status"]["state"] == "input-required"
    return task_id


def review_url(base: str, task_id: str) -> str:
    return f"{base}{QUEUE}{task_id}/review/"


def reviewer_page(new_context: Any, base: str, name: str) -> Any:
    """A browser of its own (own cookies, own session) logged in as ``name``."""
    page = new_context().new_page()
    log_in(page, base, name, f"{name}-pw")
    return page


def tool_result(fake: FakeLLM, marker: str) -> str:
    """What the tool returned, as the model got it when the run resumed."""
    resumed = fake.requests_for(marker)[1].body["messages"]
    return next(m["content"] for m in reversed(resumed) if m["role"] == "tool")


def rows(page: Any) -> Any:
    return page.locator("#result_list tbody tr")


# -- 1. claims -------------------------------------------------------------------------


def test_a_claim_warns_the_second_reviewer_who_may_answer_anyway(
    page: Any,
    new_context: Any,
    live_server: Any,
    rpc: RpcClient,
    agent: FakeLLM,
    team: dict[str, Any],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    task_id = waiting(rpc, agent, "claimed", then="Filed your taxi.")
    log_in(page, live_server.url, "rita", "rita-pw")
    page.goto(review_url(live_server.url, task_id))
    expect(page.locator("#tnx-hold")).to_contain_text("Nobody is reviewing this task yet.")
    page.click("#tnx-hold-button")
    expect(page.locator(".messagelist .success")).to_contain_text("You are reviewing this task")
    expect(page.locator("#tnx-hold")).to_contain_text("Being reviewed by rita")
    expect(page.locator("#tnx-release")).to_be_visible()

    sam = reviewer_page(new_context, live_server.url, "sam")
    sam.goto(f"{live_server.url}{QUEUE}")
    expect(rows(sam).first.locator(".field-review")).to_contain_text("being reviewed by rita")
    sam.goto(review_url(live_server.url, task_id))
    expect(sam.locator("#tnx-hold")).to_contain_text("Being reviewed by rita")
    expect(sam.locator("#tnx-take-over")).to_be_visible()
    approve = sam.locator("#tnx-approve-form")
    expect(approve).to_contain_text("Answer anyway: rita is reviewing this task")
    # The picture: what sam sees on opening the page, before answering anything.
    sam.screenshot(path=str(screenshots(tmp_path) / "review-held.png"))
    approve.locator("button.tnx-approve").click()
    expect(sam.locator(".messagelist .warning")).to_contain_text(
        "This task is being reviewed by rita. Tick “Answer anyway” to answer it."
    )
    assert rpc.get(task_id)["result"]["status"]["state"] == "input-required"
    assert decisions_of(task_id) == []

    approve = sam.locator("#tnx-approve-form")
    approve.get_by_label("Answer anyway: rita is reviewing this task").check()
    approve.locator("button.tnx-approve").click()
    expect(sam.locator(".messagelist .success")).to_contain_text("Answered")

    done = rpc.wait(task_id, ("completed", "failed"))
    assert done["status"]["state"] == "completed"
    [decision] = decisions_of(task_id)
    assert (decision["decision"], decision["actor"]) == ("approve", "sam")
    assert re.fullmatch(FILED.format(amount="42.5", where="other"), tool_result(agent, "claimed"))


# -- 2. bulk --------------------------------------------------------------------------


def test_bulk_approval_of_three_tasks_resumes_each_run(
    page: Any,
    live_server: Any,
    rpc: RpcClient,
    agent: FakeLLM,
    team: dict[str, Any],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    claims = {
        "bulk-1": {"amount": 12.0, "description": "Train to Utrecht"},
        "bulk-2": {"amount": 30.0, "description": "Hotel breakfast"},
        "bulk-3": {"amount": 7.5, "description": "Parking at the office"},
    }
    ids = {m: waiting(rpc, agent, m, args, then=f"{m} filed.") for m, args in claims.items()}
    log_in(page, live_server.url, "rita", "rita-pw")
    page.goto(f"{live_server.url}{QUEUE}")
    expect(rows(page)).to_have_count(3)
    for task_id in ids.values():
        page.locator(f"#result_list input.action-select[value='{task_id}']").check()
    page.select_option("select[name=action]", "approve_selected")
    # "Go" (Django 5.2) or "Run" (6.x): the actions bar's one submit button.
    page.locator(".actions button[name=index]").click()

    expect(page.locator("h1")).to_have_text("Approve the selected tasks?")
    listed = page.locator("#tnx-bulk-tasks tbody tr")
    expect(listed).to_have_count(3)
    expect(page.locator("#tnx-bulk-tasks tr.tnx-fits")).to_have_count(3)
    for args in claims.values():
        expect(page.locator("#tnx-bulk-tasks")).to_contain_text(args["description"])
    # Green, as on the review page (the admin's confirmation pages are red: deletions).
    expect(page.locator("#tnx-bulk-confirm")).to_have_css("background-color", "rgb(46, 125, 50)")
    page.fill("#id_comment", "Receipts checked for the whole trip.")
    full_page_screenshot(page, screenshots(tmp_path) / "review-bulk.png")
    page.get_by_role("button", name="Yes, approve them").click()

    expect(page.locator(".messagelist .success")).to_contain_text(
        "Approved 3 tasks; their runs resume in the background."
    )
    expect(page.locator("#result_list")).to_have_count(0)  # the queue is empty now
    for marker, task_id in ids.items():
        done = rpc.wait(task_id, ("completed", "failed"))
        assert done["status"]["state"] == "completed"
        assert done["artifacts"][0]["parts"][0]["text"] == f"{marker} filed."
        amount = claims[marker]["amount"]
        assert re.fullmatch(FILED.format(amount=amount, where="other"), tool_result(agent, marker))
        # Each Task was answered on its own: one answer event each.
        [decision] = decisions_of(task_id)
        assert decision["decision"] == "approve"
        assert decision["actor"] == "rita"
        assert decision["comment"] == "Receipts checked for the whole trip."
        assert decision["via"] == "admin-bulk"


# -- 3. edit, then approve ---------------------------------------------------------------


def test_edit_then_approve_runs_the_tool_with_the_edited_arguments(
    page: Any,
    live_server: Any,
    rpc: RpcClient,
    agent: FakeLLM,
    team: dict[str, Any],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    task_id = waiting(rpc, agent, "edited", then="Filed 40.0 for your taxi.")
    log_in(page, live_server.url, "rita", "rita-pw")
    page.goto(review_url(live_server.url, task_id))
    edit = page.locator("#tnx-edit-form")
    expect(edit.locator("h2")).to_have_text("Edit, then approve")
    # The fields come from the tool's input schema, filled with the model's call.
    expect(page.locator("#id_edit-amount")).to_have_value("42.5")
    expect(page.locator("#id_edit-description")).to_have_value("Taxi, airport to client")
    page.fill("#id_edit-amount", "40")
    page.fill("#id_edit-description", "Taxi, airport to client (no tip)")
    page.fill("#id_edit-comment", "The tip is not covered.")
    full_page_screenshot(page, screenshots(tmp_path) / "review-edit.png")
    edit.get_by_role("button", name="Approve with these arguments").click()
    expect(page.locator(".messagelist .success")).to_contain_text("Answered")

    done = rpc.wait(task_id, ("completed", "failed"))
    assert done["status"]["state"] == "completed"
    assert re.fullmatch(FILED.format(amount=r"40\.0", where="other"), tool_result(agent, "edited"))
    [decision] = decisions_of(task_id)
    assert (decision["decision"], decision["actor"]) == ("approve", "rita")

    # The answered Task's page, read-only: the edit in the decisions and the timeline.
    page.goto(review_url(live_server.url, task_id))
    expect(page.locator("h1")).to_have_text("Reviewed task")
    expect(page.locator("#tnx-decided")).to_contain_text("arguments edited")
    edited = page.locator("#tnx-timeline tr.tnx-event-answer .tnx-edited")
    expect(edited).to_contain_text("arguments edited")
    expect(edited.locator(".tnx-edited-to")).to_contain_text("40")
    expect(edited.locator(".tnx-edited-to")).to_contain_text("(no tip)")
    expect(page.locator("#tnx-edit-form")).to_have_count(0)


# -- 4. filters and search ------------------------------------------------------------------


def test_the_queue_filters_by_tool_and_claim_and_searches_tools_and_arguments(
    page: Any,
    live_server: Any,
    rpc: RpcClient,
    agent: FakeLLM,
    team: dict[str, Any],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    # 17.125 is only in the arguments: the prompt says "17.12" (two decimals).
    hotel = waiting(rpc, agent, "f-hotel", {"amount": 17.125, "description": "Hotel in Lisbon"})
    taxi = waiting(rpc, agent, "f-taxi")
    trip = waiting(
        rpc,
        agent,
        "f-trip",
        {"question": "Which dates is the trip to Porto?"},
        tool="ask_requester",
        text="Book my trip to Porto.",
    )
    log_in(page, live_server.url, "rita", "rita-pw")
    page.goto(review_url(live_server.url, taxi))
    page.click("#tnx-hold-button")
    expect(page.locator("#tnx-hold")).to_contain_text("Being reviewed by rita")

    page.goto(f"{live_server.url}{QUEUE}")
    expect(rows(page)).to_have_count(3)
    filters = page.locator("#changelist-filter")
    filters.locator("details[data-filter-title='tool'] a", has_text="file_expense").click()
    expect(page).to_have_url(re.compile(r"[?&]tool=file_expense"))
    expect(rows(page)).to_have_count(2)
    expect(page.locator("#result_list")).not_to_contain_text("ask_requester")
    page.screenshot(path=str(tmp_path / "review-filters.png"))
    filters.locator("details[data-filter-title='tool'] a", has_text="ask_requester").click()
    expect(rows(page)).to_have_count(1)
    expect(rows(page).first).to_contain_text("Which dates is the trip to Porto?")

    def search(words: str) -> Any:
        page.goto(f"{live_server.url}{QUEUE}")
        page.fill("#searchbar", words)
        page.press("#searchbar", "Enter")
        expect(page.locator("#searchbar")).to_have_value(words)
        return rows(page)

    expect(search("ask_requester")).to_have_count(1)  # a tool's name
    expect(rows(page).first.locator(f"a.tnx-prompt-link[href*='{trip}']")).to_have_count(1)
    expect(search("file_expense")).to_have_count(2)
    found = search("17.125")  # an argument's value, in no prompt
    expect(found).to_have_count(1)
    expect(found.first.locator(f"a.tnx-prompt-link[href*='{hotel}']")).to_have_count(1)
    expect(search("Lisbon")).to_have_count(1)  # a word of the description
    expect(search("no such words")).to_have_count(0)

    page.goto(f"{live_server.url}{QUEUE}")  # the filters' links keep the search
    filters.locator("details[data-filter-title='held'] a", has_text="by me").click()
    expect(rows(page)).to_have_count(1)
    expect(rows(page).first.locator(f"a.tnx-prompt-link[href*='{taxi}']")).to_have_count(1)
    filters.locator("details[data-filter-title='held'] a", has_text="by nobody").click()
    expect(rows(page)).to_have_count(2)


# -- 5. the admin log ------------------------------------------------------------------


def test_recent_actions_and_the_tasks_history_show_the_decisions(
    page: Any,
    live_server: Any,
    rpc: RpcClient,
    agent: FakeLLM,
    team: dict[str, Any],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    task_id = waiting(rpc, agent, "logged")
    log_in(page, live_server.url, "rita", "rita-pw")
    page.goto(review_url(live_server.url, task_id))
    page.click("#tnx-hold-button")
    expect(page.locator("#tnx-release")).to_be_visible()
    page.fill("#id_approve-comment", "Matches the receipt.")
    page.locator("#tnx-approve-form button.tnx-approve").click()
    expect(page.locator(".messagelist .success")).to_contain_text("Answered")
    rpc.wait(task_id, ("completed", "failed"))

    page.goto(f"{live_server.url}/admin/")
    recent = page.locator("#recent-actions-module")
    expect(recent.locator("li")).to_have_count(2)
    expect(recent).to_contain_text("Held “Approve an expense claim of 42.50")
    expect(recent).to_contain_text("Approved “Approve an expense claim of 42.50")

    page.goto(f"{live_server.url}/admin/toolnexus_django/taskrecord/{task_id}/history/")
    history = page.locator("#change-history tbody tr")
    expect(history).to_have_count(2)
    expect(history.nth(0)).to_contain_text("rita")
    expect(history.nth(0)).to_contain_text("Held “Approve an expense claim of 42.50")
    expect(history.nth(1)).to_contain_text("Approved “Approve an expense claim of 42.50")
    expect(history.nth(1)).to_contain_text("comment: “Matches the receipt.”")
    full_page_screenshot(page, screenshots(tmp_path) / "review-history.png")

    # And the decisions list, "my decisions".
    page.goto(f"{live_server.url}/admin/toolnexus_django/taskdecision/?mine=1")
    expect(page.locator("#result_list")).to_contain_text("approved")
    expect(page.locator("#result_list")).to_contain_text("rita")


# -- 6. the read-only page of an answered Task ---------------------------------------------


def test_an_answered_task_keeps_a_read_only_review_page(
    page: Any,
    live_server: Any,
    rpc: RpcClient,
    agent: FakeLLM,
    team: dict[str, Any],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    task_id = waiting(rpc, agent, "declined", then="Your claim was not approved.")
    log_in(page, live_server.url, "rita", "rita-pw")
    page.goto(review_url(live_server.url, task_id))
    page.fill("#id_decline-comment", "Taxis need a manager's approval first.")
    page.locator("#tnx-decline-form button.tnx-decline").click()
    expect(page.locator(".messagelist .success")).to_contain_text("Answered")
    done = rpc.wait(task_id, ("completed", "failed"))
    assert done["status"]["state"] == "completed"

    page.goto(review_url(live_server.url, task_id))
    expect(page.locator("h1")).to_have_text("Reviewed task")
    expect(page.locator("#tnx-decided")).to_contain_text("the task is now completed")
    decision = page.locator("#tnx-decided tr.tnx-decision")
    expect(decision).to_have_count(1)
    expect(decision).to_contain_text("decline")
    expect(decision).to_contain_text("rita")
    expect(decision).to_contain_text("Taxis need a manager's approval first.")
    # What the reviewer saw stays readable: the request, the transcript to the halt.
    expect(page.locator("#tnx-request")).to_contain_text("What it asked")
    expect(page.locator("#tnx-request")).to_contain_text("Approve an expense claim of 42.50")
    expect(page.locator("#tnx-input")).to_contain_text("airport to the client's office")
    transcript = page.locator("#tnx-transcript")
    expect(transcript).to_contain_text("file_expense")
    expect(transcript).to_contain_text("Taxi, airport to client")
    expect(transcript.locator(".tnx-flag")).to_have_text("halted here for review")
    expect(page.locator("#tnx-answer")).to_contain_text("Nothing is waiting for a person here")
    expect(page.locator("form.tnx-answer")).to_have_count(0)
    expect(page.locator("#tnx-hold")).to_have_count(0)
    kinds = page.locator("#tnx-timeline tr.tnx-event .tnx-kind")
    expect(kinds).to_have_text(["submit", "claim", "suspend", "answer", "resume", "complete"])
    full_page_screenshot(page, screenshots(tmp_path) / "review-answered.png")


# -- 7. answer and review next --------------------------------------------------------------


def test_answer_and_review_next_opens_the_other_waiting_task(
    page: Any,
    live_server: Any,
    rpc: RpcClient,
    agent: FakeLLM,
    team: dict[str, Any],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    first = waiting(rpc, agent, "next-1", {"amount": 9.0, "description": "Bus ticket"})
    second = waiting(rpc, agent, "next-2", {"amount": 64.0, "description": "Client dinner"})
    log_in(page, live_server.url, "rita", "rita-pw")
    page.goto(review_url(live_server.url, first))
    expect(page.locator("#tnx-request")).to_contain_text("Bus ticket")
    approve = page.locator("#tnx-approve-form")
    approve.get_by_role("button", name="… and review next").click()

    expect(page).to_have_url(review_url(live_server.url, second))
    expect(page.locator(".messagelist .success")).to_contain_text("Answered")
    expect(page.locator("h1")).to_have_text("Review task")
    expect(page.locator("#tnx-request")).to_contain_text("Client dinner")
    page.screenshot(path=str(tmp_path / "review-next.png"))
    assert rpc.wait(first, ("completed", "failed"))["status"]["state"] == "completed"
    assert rpc.get(second)["result"]["status"]["state"] == "input-required"

    # The last one: "… and review next" goes back to the queue, saying so.
    page.locator("#tnx-approve-form").get_by_role("button", name="… and review next").click()
    expect(page.locator(".messagelist .info")).to_contain_text(
        "No other task is waiting for a reviewer."
    )
    expect(page.locator("#result_list")).to_have_count(0)
    assert rpc.wait(second, ("completed", "failed"))["status"]["state"] == "completed"


# -- 8. four eyes ---------------------------------------------------------------------------


def test_four_eyes_needs_a_second_reviewer_before_the_tool_runs(
    page: Any,
    new_context: Any,
    live_server: Any,
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    team: dict[str, Any],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    # The live server runs in this process: the settings apply to it. The
    # payment, as review-team.md says (the demo's expense claims need one).
    configure(fake_llm, REVIEW={"APPROVALS": {"pay_supplier": 2}})
    task_id = waiting(
        rpc, fake_llm, "four-eyes", PAYMENT, tool="pay_supplier", text=INVOICE,
        then="Paid, with two approvals.",
    )  # fmt: skip
    log_in(page, live_server.url, "rita", "rita-pw")
    page.goto(review_url(live_server.url, task_id))
    expect(page.locator("#tnx-approvals")).to_have_text("0 of 2 approvals")
    expect(page.locator("#tnx-edit-form")).to_have_count(0)  # four-eyes calls are not edited
    page.locator("#tnx-approve-form button.tnx-approve").click()
    expect(page.locator(".messagelist .success")).to_contain_text(
        "Your approval of “Pay 1250.00 to Acme Office Supplies?”"
    )
    expect(page.locator(".messagelist .success")).to_contain_text(
        "another reviewer must approve it too."
    )
    expect(rows(page).first.locator(".field-review")).to_contain_text("1 of 2 approvals")
    assert rpc.get(task_id)["result"]["status"]["state"] == "input-required"

    page.goto(review_url(live_server.url, task_id))
    expect(page.locator("#tnx-approvals")).to_have_text("1 of 2 approvals: rita")
    expect(page.locator("#tnx-hold")).to_contain_text("You approved it")
    page.locator("#tnx-approve-form button.tnx-approve").click()  # again: refused
    expect(page.locator(".messagelist .warning")).to_have_text(
        "You already approved this request; it needs 2 different reviewers."
    )
    expect(page.locator("#tnx-approvals")).to_have_text("1 of 2 approvals: rita")
    assert rpc.get(task_id)["result"]["status"]["state"] == "input-required"

    sam = reviewer_page(new_context, live_server.url, "sam")
    sam.goto(review_url(live_server.url, task_id))
    expect(sam.locator("#tnx-approvals")).to_have_text("1 of 2 approvals: rita")
    full_page_screenshot(sam, screenshots(tmp_path) / "review-four-eyes.png")
    sam.locator("#tnx-approve-form button.tnx-approve").click()
    expect(sam.locator(".messagelist .success")).to_contain_text("Answered")

    done = rpc.wait(task_id, ("completed", "failed"))
    assert done["status"]["state"] == "completed"
    assert re.fullmatch(
        r"Paid 1250\.00 to Acme Office Supplies: PAY-\w+\.", tool_result(fake_llm, "four-eyes")
    )
    kinds = [e["kind"] for e in events_of(task_id)]
    assert kinds.count("review_approval") == 1 and kinds.count("answer") == 1, kinds
    [decision] = decisions_of(task_id)
    assert (decision["decision"], decision["actor"]) == ("approve", "sam")


# -- 9. the queue at 1280 px, sidebar open ------------------------------------------------


def test_the_queue_fits_1280_px_with_the_navigation_sidebar_open(
    page: Any,
    live_server: Any,
    rpc: RpcClient,
    agent: FakeLLM,
    team: dict[str, Any],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    long = "Two nights at the conference hotel in Lisbon, breakfast and the late check-out fee"
    waiting(rpc, agent, "wide-1", {"amount": 412.35, "description": long})
    claimed = waiting(rpc, agent, "wide-2")
    waiting(
        rpc,
        agent,
        "wide-3",
        {"supplier": "Acme Office Supplies International B.V.", "amount": 1250.0},
        tool="pay_supplier",
        text="Pay Acme's invoice for the new desks.",
    )
    waiting(
        rpc,
        agent,
        "wide-4",
        {"question": "Which dates, and which airport do you fly from for the trip to Porto?"},
        tool="ask_requester",
        text="Book my trip to Porto.",
    )
    log_in(page, live_server.url, "rita", "rita-pw")
    page.goto(review_url(live_server.url, claimed))
    page.click("#tnx-hold-button")
    expect(page.locator("#tnx-release")).to_be_visible()

    page.goto(f"{live_server.url}{QUEUE}")
    expect(rows(page)).to_have_count(4)
    expect(page.locator("#nav-sidebar")).to_be_visible()  # open, as a reviewer first sees it
    expect(page.locator("#result_list")).to_contain_text("being reviewed by rita")
    expect(page.locator("#result_list")).to_contain_text("0 of 2 approvals")
    full_page_screenshot(
        page, tmp_path / "review-queue-1280.png"
    )  # first: it shows a failure
    # Every column shows in full: none past the table's box (the admin's
    # .results scrolls a table wider than its room, hiding the last columns
    # under the filters), none past the viewport, and nothing scrolls sideways.
    room = page.locator("#changelist .results").bounding_box()
    assert room is not None and room["x"] + room["width"] <= 1280, room
    headers = page.locator("#result_list thead th")
    expect(page.locator("#result_list thead th.column-expires")).to_be_visible()
    widths = page.evaluate(
        "[...document.querySelectorAll('#result_list thead th')]"
        ".map(th => [th.className, Math.round(th.getBoundingClientRect().width)])"
    )
    for i in range(headers.count()):
        box = headers.nth(i).bounding_box()
        assert box is not None, widths
        assert box["x"] + box["width"] <= room["x"] + room["width"] + 0.5, (i, box, room, widths)
    scrolls = page.evaluate(
        "[...document.querySelectorAll('#changelist, #changelist .results')]"
        ".map(e => [e.scrollWidth, e.clientWidth])"
    )
    assert all(scroll <= client for scroll, client in scrolls), (scrolls, widths)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
