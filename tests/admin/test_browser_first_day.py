"""The admin on a reviewer's first day, in a real browser at 1280 by 800
(issue 35): a Task's timeline fits its box — four-eyes decisions with long
comments and all, down to its last column — the queue's question opens the
review page, people are named by their usernames, and a plain approval asks
for a yes or a no, not for JSON. One browser session checks them all, on the
WSGI live server only (the wire is not the point here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toolnexus import Answer

from tests.admin.test_browser_review_team import (  # noqa: F401 (fixtures)
    QUEUE,
    review_url,
    rows,
    team,
)
from tests.browser import (  # noqa: F401 (fixtures: pytest looks them up by name in the module)
    MARKS,
    _orm_beside_playwright,
    browser,
    browser_type,
    browser_type_launch_args,
    full_page_screenshot,
    log_in,
    playwright,
)
from tests.conftest import wait_until
from tests.fakes import FakeLLM, Text
from tests.review.test_review_team import waiting_expense
from tests.utils import pending_id
from toolnexus_django.models import TaskRecord
from toolnexus_django.review import answer_task

pytestmark = MARKS

RECORD = "/admin/toolnexus_django/taskrecord/{}/change/"
#: What reviewers write: sentences, and a link with no place to break.
COMMENTS = (
    "Checked the receipt against the card statement: the taxi from the airport to the "
    "client's office on Tuesday, 42.50 with the tip, which the travel policy allows for "
    "client visits outside office hours.",
    "Second pair of eyes: matches https://expenses.example.com/receipts/2024/03/19/"
    "taxi-airport-to-client-office-tuesday-42-50-including-tip.pdf and the trip in the "
    "calendar.",
)


@pytest.fixture(scope="module")
def browser_context_args() -> dict[str, Any]:
    # A laptop's screen: where the timeline was wider than its box.
    return {"viewport": {"width": 1280, "height": 800}}


def four_eyes_task(owner: Any, reviewers: list[Any]) -> str:
    """``owner``'s expense, approved by both ``reviewers`` (each with a long
    comment), its run resumed and finished."""
    task_id = waiting_expense("file my taxi, four eyes", owner=str(owner.pk))
    for user, comment in zip(reviewers, COMMENTS, strict=True):
        answer_task(
            task_id, Answer(id=pending_id(task_id), ok=True), decision="approve", user=user,
            comment=comment,
        )  # fmt: skip
    wait_until(
        lambda: TaskRecord.objects.get(pk=task_id).state in ("completed", "failed"),
        what=f"task {task_id} to finish",
    )
    return task_id


def test_a_first_day_in_the_admin_at_1280_by_800(
    page: Any,
    live_server: Any,
    configure: Any,
    fake_llm: FakeLLM,
    team: dict[str, Any],  # noqa: F811
    django_user_model: Any,
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    configure(fake_llm, REVIEW={"APPROVALS": {"file_expense": 2}})
    fake_llm.push(Text("Filed your taxi."))
    alice = django_user_model.objects.create_user("alice", password="alice-pw")
    decided = four_eyes_task(alice, [team["rita"], team["sam"]])
    plain = waiting_expense("file my lunch", owner=str(alice.pk))
    log_in(page, live_server.url, "rita", "rita-pw")

    # The Task's timeline: its last column shows, or its box scrolls sideways.
    page.goto(live_server.url + RECORD.format(decided))
    timeline = page.locator(".field-timeline table.tnx-timeline")
    expect(timeline.locator("tr.tnx-event-review_approval")).to_contain_text(COMMENTS[0][:40])
    page.screenshot(path=str(tmp_path / "task-timeline-1280.png"), full_page=True)
    expect(timeline.locator("thead th").last).to_have_text("Comment")
    # The last column ends inside every box that clips the timeline (Django's
    # form row hides what is wider) and the viewport — or the innermost box
    # scrolls sideways, itself inside the others.
    seen = page.evaluate(
        """table => {
            const clips = [];
            for (let e = table.parentElement; e; e = e.parentElement) {
                const overflow = getComputedStyle(e).overflowX;
                if (overflow !== "visible") clips.push({
                    box: e.className, overflow, right: e.getBoundingClientRect().right,
                    scrolls: e.scrollWidth > e.clientWidth,
                });
            }
            const last = table.querySelector("thead th:last-child").getBoundingClientRect();
            return {right: last.right, clips};
        }""",
        timeline.element_handle(),
    )
    clips = seen["clips"]
    room = min([c["right"] for c in clips] + [1280])
    fits = seen["right"] <= room + 0.5
    inner, outer = clips[0], min([c["right"] for c in clips[1:]] + [1280])
    scrolls = inner["overflow"] in ("auto", "scroll") and inner["scrolls"]
    assert fits or (scrolls and inner["right"] <= outer + 0.5), seen
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    for text in COMMENTS:  # each comment wraps in a column wide enough to read
        cell = timeline.locator("td.tnx-comment", has_text=text[:30])
        expect(cell).to_be_visible()
        box = cell.bounding_box()
        assert box is not None and box["width"] >= 150, box
        if fits:
            assert box["x"] + box["width"] <= room + 0.5, (box, seen)
    # Who: usernames, never the requester's id.
    expect(timeline.locator("tr.tnx-event-submit td.tnx-who")).to_contain_text("alice")
    expect(timeline.locator("tr.tnx-event-review_approval td.tnx-who")).to_contain_text("rita")
    expect(timeline.locator("tr.tnx-event-answer td.tnx-who")).to_contain_text("sam")

    # The queue: the question opens the review page.
    page.goto(f"{live_server.url}{QUEUE}")
    expect(rows(page)).to_have_count(1)
    rows(page).first.get_by_role("link", name="Approve: file my lunch?").click()
    expect(page).to_have_url(review_url(live_server.url, plain))
    expect(page.locator("h1")).to_have_text("Review task")
    # A plain approval: approve or decline, with a comment; no JSON to write.
    expect(page.locator("#tnx-approve-form")).to_be_visible()
    expect(page.locator("#tnx-decline-form")).to_be_visible()
    expect(page.locator("#id_approve-comment")).to_be_visible()
    expect(page.locator("#tnx-reply-form")).to_have_count(0)
    expect(page.locator("#tnx-answer textarea")).to_have_count(2)  # the two comments
    expect(page.locator("#tnx-timeline tr.tnx-event-submit td.tnx-who")).to_contain_text("alice")
    full_page_screenshot(page, tmp_path / "plain-approval-1280.png")
