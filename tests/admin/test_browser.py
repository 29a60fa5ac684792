"""A real browser reviews a suspended Task: Debian's Chromium (never a
downloaded one) driven by pytest-playwright logs into the admin, opens the
queue, fills the form generated from the Request's schema, submits, and the
Task completes. ``UPDATE_SCREENSHOTS=1`` also rewrites the README's
screenshots, docs/review-page.png and docs/review-queue.png."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from tests.browser import (  # noqa: F401 (fixtures: pytest looks them up by name in the module)
    DOCS,
    MARKS,
    _orm_beside_playwright,
    browser,
    browser_context_args,
    browser_type,
    browser_type_launch_args,
    playwright,
)
from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text, ToolCall

pytestmark = MARKS


def test_a_reviewer_answers_a_task_in_the_browser(
    page: Any,
    live_server: Any,
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    django_user_model: Any,
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    # The screenshots are always taken; they replace the committed ones in
    # docs/ only on request, so a test run leaves the work tree clean.
    shots = DOCS if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path

    django_user_model.objects.create_superuser("rita", "rita@example.com", "review-pw")
    configure(fake_llm)
    fake_llm.push(
        ToolCall("file_expense", {"amount": 42.5, "description": "Taxi, airport to client"}),
        Text("Your taxi expense is filed: 40.0 under travel."),
    )
    task = rpc.send(
        "Please file my taxi from the airport to the client's office on Tuesday: 42.50."
    )
    assert rpc.wait(task["id"])["status"]["state"] == "input-required"

    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "rita")
    page.fill("#id_password", "review-pw")
    page.click("input[type=submit]")
    page.get_by_role("link", name="Awaiting a human", exact=True).click()
    page.click("#toggle-nav-sidebar")  # more room for the screenshots
    expect(page.locator("#result_list")).to_contain_text("file_expense")
    expect(page.locator("#result_list")).to_contain_text("Approve an expense claim of 42.50")
    page.screenshot(path=str(shots / "review-queue.png"))
    page.locator("#result_list tbody tr").first.get_by_role("link").first.click()

    expect(page.locator("h1")).to_have_text("Review task")
    expect(page.locator("#tnx-input")).to_contain_text("airport to the client's office")
    # The timeline so far: submitted, taken by a worker, stopped on the Request.
    timeline = page.locator("#tnx-timeline")
    expect(timeline.locator("tr.tnx-event")).to_have_count(3)
    expect(timeline.locator("tr.tnx-event-suspend")).to_contain_text("working → input-required")
    expect(timeline.locator("tr.tnx-event-claim")).to_contain_text("(worker)")
    page.select_option("#id_reply-cost_center", "travel")
    page.fill("#id_reply-approved_amount", "40")
    page.fill("#id_reply-note", "Tip not covered.")
    page.fill("#id_reply-comment", "Checked against the receipt.")
    # A viewport as tall as the page, so the collapsed sidebar's strip reaches
    # the bottom of the screenshot.
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": 1280, "height": height})
    page.screenshot(path=str(shots / "review-page.png"), full_page=True)

    page.get_by_role("button", name="Send reply").click()
    expect(page.locator(".messagelist .success")).to_contain_text("Answered")
    expect(page.locator("#result_list")).to_have_count(0)  # the queue is empty now

    done = rpc.wait(task["id"], ("completed", "failed"))
    assert done["artifacts"][0]["parts"][0]["text"] == (
        "Your taxi expense is filed: 40.0 under travel."
    )
    tool_result = fake_llm.requests[1].body["messages"][-1]
    assert re.fullmatch(
        r"Filed expense claim EXP-\w+: 40\.0 under travel\.", tool_result["content"]
    )

    page.goto(f"{live_server.url}/admin/toolnexus_django/taskrecord/{task['id']}/change/")
    expect(page.locator(".field-state")).to_contain_text("completed")
    expect(page.locator(".field-timeline")).to_contain_text("Checked against the receipt.")
    expect(page.locator(".field-timeline")).to_contain_text("rita")
    # Every move, in order, with who made it and from which state to which.
    rows = page.locator(".field-timeline tr.tnx-event")
    expect(rows).to_have_count(6)
    kinds = [rows.nth(i).locator(".tnx-kind").inner_text() for i in range(6)]
    assert kinds == ["submit", "claim", "suspend", "answer", "resume", "complete"]
    answer = page.locator(".field-timeline tr.tnx-event-answer")
    expect(answer).to_contain_text("rita (user)")
    expect(answer).to_contain_text("input-required → working")
    expect(answer).to_contain_text("reply")
    expect(page.locator(".field-timeline tr.tnx-event-complete")).to_contain_text(
        "working → completed"
    )
