"""The docs' walk-throughs in a real browser (Debian's chromium, driven by
pytest-playwright), as their pages print them, taking the pictures the pages
show: the tutorial's (and README's) claim — alice's "42 for a taxi", approved
by the superuser with a reply — and the review guide's — alice's hotel night,
approved by the demo's reviewer rita with another amount.

Each runs on the demo's own agent (the expenses app's tools, acting as the
person who asks; its offline model), with the people made by the commands
the page prints, the claim sent over real HTTP by the page's own curl, and
every name, message, prompt, reply and answer read from the page
(tests/docs/walkthroughs.py): the pictures cannot show another claim than the
words. What the pages say a page of the admin shows is checked on it before
its picture is taken. ``UPDATE_SCREENSHOTS=1`` writes the pictures into
docs/ (tests/docs/test_screenshots.py lists which test takes which).

One browser session for both, on the WSGI live server only (the wire is not
the point here); each test starts from an empty database with its sequences
reset, as a newcomer's demo does (the pages print ``EXP-1``)."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.browser import (  # noqa: F401 (fixtures: pytest looks them up by name in the module)
    MARKS,
    _orm_beside_playwright,
    admin_as_documented,
    browser,
    browser_context_args,
    browser_type,
    browser_type_launch_args,
    full_page_screenshot,
    log_in,
    playwright,
    screenshots,
)
from tests.conftest import RpcClient, basic
from tests.docs.walkthroughs import Claim, review_guide, tutorial
from tests.e2e.test_install_pastes import PRINTED_ADDRESS

pytestmark = [
    pytest.mark.django_db(transaction=True, reset_sequences=True),
    *(mark for mark in MARKS if mark.name != "django_db"),
]

DONE = ("completed", "failed", "canceled")
QUEUE_URL = "/admin/toolnexus_django/awaitinghumantask/"
TASK_URL = "/admin/toolnexus_django/taskrecord/{}/change/"


@pytest.fixture
def demo(settings: Any) -> Iterator[None]:
    """The demo's own agent, as ``manage.py toolnexus_serve`` runs it (the
    suite's is the example one: tests/conftest.py), and its admin as a
    default setup has it."""
    expenses = settings.DEMO_AGENTS["expenses"]
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "TOOLKIT": {**settings.TOOLNEXUS["TOOLKIT"], "tools": expenses["tools"]},
        "AUTHENTICATION_CLASSES": expenses["authentication"],
        "CLIENT": "testproject.demo.offline_client",
    }
    with admin_as_documented():
        yield


def make_people(lines: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the page's ``manage.py`` lines (``NAME=value`` prefixes and all)
    in this process, on the test database."""
    for line in lines:
        words = shlex.split(line)
        with monkeypatch.context() as env:
            while "=" in words[0]:
                name, value = words.pop(0).split("=", 1)
                env.setenv(name, value)
            command = words[words.index("manage.py") + 1 :]
            call_command(*command, stdout=io.StringIO())


def run_shell(script: str, base: str) -> list[dict[str, Any]]:
    """Run a page's shell ``script`` against the live server (the printed
    127.0.0.1:8000 and ``$BASE`` made its address); each line it prints, as JSON."""
    done = subprocess.run(
        ["sh", "-c", script.replace(f"http://{PRINTED_ADDRESS}", base)],
        env={**os.environ, "BASE": base},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def requester_of(claim: Claim, base: str) -> RpcClient:
    """The A2A endpoint, signed in as the claim's requester."""
    return RpcClient(f"{base}/agent/", headers=basic(claim.requester, claim.requester_password))


def waiting_claim(claim: Claim, sent: dict[str, Any], base: str) -> str:
    """The id of the Task ``sent`` (a JSON-RPC reply), once it waits for a
    reviewer with the page's prompt."""
    task = requester_of(claim, base).wait(sent["result"]["id"])
    assert task["status"]["state"] == "input-required", task
    assert task["status"]["message"]["parts"][0]["text"] == claim.prompt
    return str(task["id"])


def fill_reply(page: Any, claim: Claim, comment: str = "") -> None:
    """Fill "Reply with data" with the page's reply (and a reviewer comment)."""
    for name, value in claim.reply.items():
        field = page.locator(f"#id_reply-{name}")
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    if comment:
        page.fill("#id_reply-comment", comment)


def check_queue_row(page: Any, claim: Claim, task_id: str) -> Any:
    """The queue lists the claim alone — its tool, its owner — and its question
    is a link to its review page (returned)."""
    from playwright.sync_api import expect

    row = page.locator("#result_list tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator("td.field-tool_call")).to_contain_text("file_expense")
    expect(row.locator("td.field-who")).to_contain_text(claim.requester)
    question = row.get_by_role("link", name=claim.prompt, exact=True)
    expect(question).to_have_attribute("href", f"{QUEUE_URL}{task_id}/review/")
    return question


def check_expense_row(page: Any, base: str, claim: Claim, task_id: str) -> None:
    """**Expenses** → **Expenses**: the claim is a row of alice's, approved by
    the reviewer, whose Task column links the Task that filed it."""
    from playwright.sync_api import expect

    page.goto(f"{base}/admin/")
    expenses = page.locator(".app-expenses")  # the app, then its model
    expect(expenses.locator("caption")).to_have_text("Expenses")
    expenses.locator(".model-expense").get_by_role("link", name="Expenses", exact=True).click()
    # "to change" for the superuser, "to view" for rita, who may only view them.
    expect(page.locator("h1")).to_have_text(re.compile(r"Select expense to (change|view)"))
    row = page.locator("#result_list tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator("th")).to_have_text(claim.expense)
    expect(row.locator("td.field-owner")).to_have_text(claim.requester)
    expect(row.locator("td.field-approved_by")).to_have_text(claim.reviewer)
    task = row.locator("td.field-task_short a")
    expect(task).to_have_attribute("href", TASK_URL.format(task_id))
    # Its own page names the Task too, read-only.
    row.locator("th a").click()
    link = page.locator(".field-task a")
    expect(link).to_have_text(task_id)
    expect(link).to_have_attribute("href", TASK_URL.format(task_id))


def check_review_page(page: Any, claim: Claim) -> None:
    """What the pages say the review page shows: what the tool asks, the
    requester's own words, the conversation up to the stop, a form per way
    of answering."""
    from playwright.sync_api import expect

    expect(page.locator("h1")).to_have_text("Review task")
    expect(page.locator("#tnx-request")).to_contain_text(claim.prompt)
    expect(page.locator("#tnx-input")).to_contain_text(claim.message)
    expect(page.locator("#tnx-transcript")).to_contain_text("file_expense")
    for way in ("approve", "reply", "decline"):
        expect(page.locator(f"#tnx-{way}-form")).to_be_visible()
    expect(page.locator("#tnx-reply-form h2")).to_have_text("Reply with data")


def check_outcome(page: Any, claim: Claim) -> None:
    """The Task's page opens with what it came to — state, request, answer,
    decision — above the fold, the stored record folded below."""
    from playwright.sync_api import expect

    outcome = page.locator("#tnx-outcome")
    expect(outcome.locator("#tnx-outcome-state")).to_contain_text("completed")
    expect(outcome.locator("#tnx-outcome-request")).to_contain_text(claim.message)
    answer = outcome.locator("#tnx-outcome-answer .tnx-answer-text")
    expect(answer).to_have_text(claim.answer)
    expect(outcome.locator("#tnx-outcome-decisions")).to_contain_text(f"by {claim.reviewer}")
    assert page.evaluate("window.scrollY") == 0
    box = answer.bounding_box()
    assert box is not None and box["y"] + box["height"] < page.viewport_size["height"], box
    expect(page.locator(".field-task_json")).to_be_hidden()


# -- the tutorial (and README's "Your first approval in 60 seconds") ----------------------


def test_the_tutorials_claim_goes_through_the_admin_as_its_pictures_show(
    page: Any, live_server: Any, demo: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    claim, base, shots = tutorial(), live_server.url, screenshots(tmp_path)
    make_people(claim.people, monkeypatch)  # 2. the superuser, alice, bob and rita
    (last,) = run_shell(claim.send, base)  # 4. the tutorial's script: the Task once it stops
    assert last["result"]["status"]["state"] == "input-required", last
    task_id = waiting_claim(claim, last, base)

    # 5. Sign in. The index (a default setup's) lists the review queue first.
    log_in(page, base, claim.reviewer, claim.reviewer_password)
    app = page.locator(".app-toolnexus_django")
    expect(app.locator("tbody tr").first.locator("th a")).to_have_text("Awaiting a human")
    expect(page.locator(".app-expenses")).to_be_visible()
    for test_only in ("django_tasks_database", "django_rq"):
        expect(page.locator(f".app-{test_only}")).to_have_count(0)
    page.screenshot(path=str(shots / "admin-index.png"))
    app.get_by_role("link", name="Awaiting a human", exact=True).click()
    page.click("#toggle-nav-sidebar")  # more room for the screenshots
    question = check_queue_row(page, claim, task_id)
    page.screenshot(path=str(shots / "review-queue.png"))
    question.click()
    check_review_page(page, claim)
    fill_reply(page, claim)
    full_page_screenshot(page, shots / "review-page.png")
    page.get_by_role("button", name="Send reply", exact=True).click()

    # 6. The confirmation links to the Task, whose page opens with its answer.
    message = page.locator(".messagelist .success")
    expect(message).to_contain_text(f"Answered “{claim.prompt}” (reply)")
    link = message.get_by_role("link", name="Follow the task to its answer")
    expect(link).to_have_attribute("href", TASK_URL.format(task_id))
    expect(page.locator("#result_list")).to_have_count(0)  # the queue is empty now
    page.screenshot(path=str(shots / "decision-message.png"))
    assert requester_of(claim, base).wait(task_id, DONE)["status"]["state"] == "completed"
    link.click()
    check_outcome(page, claim)
    page.screenshot(path=str(shots / "task-page.png"))
    check_expense_row(page, base, claim, task_id)


# -- the review guide's walk-through (docs/howto/review.md) -------------------------------


def test_the_review_guides_claim_goes_through_the_admin_as_its_pictures_show(
    page: Any, live_server: Any, demo: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    claim, base, shots = review_guide(), live_server.url, screenshots(tmp_path)
    make_people(claim.people, monkeypatch)  # 1. the demo's people
    (sent,) = run_shell(claim.send, base)  # 2. alice's curl: the submitted Task at once
    assert sent["result"]["status"]["state"] == "submitted", sent
    task_id = waiting_claim(claim, sent, base)

    # 3. As rita: Agent tasks → Awaiting a human.
    log_in(page, base, claim.reviewer, claim.reviewer_password)
    app = page.locator(".app-toolnexus_django")
    expect(app.locator("caption")).to_have_text("Agent tasks")
    app.get_by_role("link", name="Awaiting a human", exact=True).click()
    page.click("#toggle-nav-sidebar")  # more room for the screenshots
    question = check_queue_row(page, claim, task_id)
    page.screenshot(path=str(shots / "review-guide-queue.png"))

    # 4. The row's review page; its timeline so far: sent, taken by a worker, stopped.
    question.click()
    check_review_page(page, claim)
    kinds = page.locator("#tnx-timeline tr.tnx-event .tnx-kind")
    expect(kinds).to_have_text(["submit", "claim", "suspend"])
    expect(page.locator("#tnx-timeline tr.tnx-event-submit .tnx-who")).to_contain_text(
        claim.requester
    )
    expect(page.locator("#tnx-timeline tr.tnx-event-claim")).to_contain_text("(worker)")
    fill_reply(page, claim, comment="Lyon's hotel cap is 75.")
    full_page_screenshot(page, shots / "review-guide-page.png")
    page.get_by_role("button", name="Send reply", exact=True).click()

    # 5. Back on the queue, told what was decided; the Task completes with the answer.
    expect(page.locator(".messagelist .success")).to_contain_text(
        f"Answered “{claim.prompt}” (reply); the task resumes in the background."
    )
    done = requester_of(claim, base).wait(task_id, DONE)
    assert done["status"]["state"] == "completed", done
    assert done["artifacts"][0]["parts"][0]["text"] == claim.answer

    # The Task's timeline: every move, in order, the answer the reviewer's.
    page.goto(base + TASK_URL.format(task_id))
    timeline = page.locator(".field-timeline")
    expect(timeline.locator("tr.tnx-event .tnx-kind")).to_have_text(
        ["submit", "claim", "suspend", "answer", "resume", "complete"]
    )
    answered = timeline.locator("tr.tnx-event-answer")
    expect(answered).to_contain_text(f"{claim.reviewer} (user)")
    expect(answered).to_contain_text("input-required → working")
    expect(answered).to_contain_text("reply")
    expect(answered).to_contain_text("Lyon's hotel cap is 75.")
    expect(timeline.locator("tr.tnx-event-complete")).to_contain_text("working → completed")

    # 6. Expenses → Expenses: the claim, at the approved amount.
    check_expense_row(page, base, claim, task_id)
