"""The admin leads a reviewer to the answer, in chromium (Debian's, driven
by pytest-playwright): the index lists the review queue first; after Approve
the message links to the Task; its page shows the answer text in the first
viewport. ``UPDATE_SCREENSHOTS=1`` rewrites docs/admin-index.png,
docs/decision-message.png and docs/task-page.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser import (  # noqa: F401 (fixtures: pytest looks them up by name in the module)
    MARKS,
    _orm_beside_playwright,
    browser,
    browser_context_args,
    browser_type,
    browser_type_launch_args,
    log_in,
    playwright,
    screenshots,
)
from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text, ToolCall

pytestmark = MARKS

REQUEST = "Please file my taxi from the airport to the client's office on Tuesday: 42.50."
ANSWER = "Your taxi expense is filed: 42.50 under travel, waiting for payroll."


def test_approve_then_follow_the_message_to_the_answer(
    page: Any,
    live_server: Any,
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    django_user_model: Any,
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    shots = screenshots(tmp_path)
    django_user_model.objects.create_superuser("rita", "rita@example.com", "review-pw")
    configure(fake_llm)
    fake_llm.push(
        ToolCall("file_expense", {"amount": 42.5, "description": "Taxi, airport to client"}),
        Text(ANSWER),
    )
    task = rpc.send(REQUEST)
    assert rpc.wait(task["id"])["status"]["state"] == "input-required"

    # The index: the app's first entry is the queue.
    log_in(page, live_server.url, "rita", "review-pw")
    app = page.locator(".app-toolnexus_django")
    expect(app.locator("tbody tr").first).to_have_class("model-awaitinghumantask")
    expect(app.locator("tbody tr").first.locator("th a")).to_have_text("Awaiting a human")
    page.screenshot(path=str(shots / "admin-index.png"))

    # The queue, the review page, Approve.
    app.get_by_role("link", name="Awaiting a human", exact=True).click()
    page.click("#toggle-nav-sidebar")  # more room for the screenshots
    page.locator("#result_list tbody tr").first.get_by_role("link").first.click()
    expect(page.locator("h1")).to_have_text("Review task")
    page.locator("button.tnx-approve").click()

    # Back on the (now empty) queue: the message says what was decided and links to the Task.
    message = page.locator(".messagelist .success")
    expect(message).to_contain_text("Answered “Approve an expense claim of 42.50")
    link = message.get_by_role("link", name="Follow the task to its answer")
    expect(link).to_have_attribute(
        "href", f"/admin/toolnexus_django/taskrecord/{task['id']}/change/"
    )
    expect(page.locator("#result_list")).to_have_count(0)
    page.screenshot(path=str(shots / "decision-message.png"))

    # The run resumes in the background; once it is done, the link shows its answer.
    assert rpc.wait(task["id"], ("completed", "failed"))["status"]["state"] == "completed"
    link.click()
    outcome = page.locator("#tnx-outcome")
    expect(outcome.locator("#tnx-outcome-state")).to_contain_text("completed")
    expect(outcome.locator("#tnx-outcome-request")).to_contain_text(REQUEST)
    answer = outcome.locator("#tnx-outcome-answer .tnx-answer-text")
    expect(answer).to_have_text(ANSWER)
    expect(outcome.locator("#tnx-outcome-decisions")).to_contain_text("approved by rita (user)")
    # Above the fold: the answer's text is within the first viewport, unscrolled.
    assert page.evaluate("window.scrollY") == 0
    box = answer.bounding_box()
    assert box is not None and box["y"] + box["height"] < page.viewport_size["height"], box
    # The stored JSON is there, folded.
    expect(page.locator(".field-task_json")).to_be_hidden()
    page.screenshot(path=str(shots / "task-page.png"))
