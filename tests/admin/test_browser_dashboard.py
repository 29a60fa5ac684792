"""The dashboard in chromium (Debian's, driven by pytest-playwright), with
data from a scripted workload: Tasks run by the fake model (completed, one
approved and resumed, one waiting, one failed) beside a week of history
rows. Every chart draws, and ``UPDATE_SCREENSHOTS=1`` rewrites
docs/dashboard.png."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from django.utils import timezone
from toolnexus import Answer

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
from tests.fakes import Fail, FakeLLM, Text, ToolCall
from tests.utils import pending_id
from toolnexus_django.models import PushConfig, PushDelivery, TaskEvent, TaskRecord, ToolCallOutcome
from toolnexus_django.review import answer_task

pytestmark = MARKS

EXPENSE = ToolCall("file_expense", {"amount": 42.5, "description": "Taxi"}, usage=(900, 60))


def workload(rpc: RpcClient, fake: FakeLLM) -> None:
    """Real runs: two answered, one approved then resumed, one waiting, one failed."""
    fake.push(Text("Filed.", usage=(1200, 80)), Text("Your balance is 12.", usage=(700, 40)))
    for text in ("file my lunch", "what is my balance"):
        assert rpc.wait(rpc.send(text)["id"])["status"]["state"] == "completed"
    fake.push(EXPENSE, Text("Your taxi is filed.", usage=(1500, 90)))
    approved = rpc.send("file my taxi: 42.50")["id"]
    assert rpc.wait(approved)["status"]["state"] == "input-required"
    answer_task(
        approved, Answer(id=pending_id(approved), ok=True), decision="approve", actor="rita"
    )
    assert rpc.wait(approved, ("completed", "failed"))["status"]["state"] == "completed"
    fake.push(EXPENSE)
    assert rpc.wait(rpc.send("file my train: 80")["id"])["status"]["state"] == "input-required"
    fake.push(Fail(500, "the model is down"))
    assert rpc.wait(rpc.send("file my hotel")["id"], ("failed",))["status"]["state"] == "failed"


def history(django_user_model: Any) -> None:
    """A week of earlier Tasks of three people, their reviewers' answers, tool
    calls and push deliveries (rows, as a busier server would have them)."""
    now = timezone.now()
    people = [django_user_model.objects.create_user(n) for n in ("alice", "bob", "carol")]
    states = ["completed"] * 6 + ["failed", "canceled"]
    for n in range(160):
        at = now - timedelta(hours=n % 24 + 24 * (n % 7 if n % 3 else 0), minutes=n % 50)
        tid = f"t-history-{n}"
        TaskRecord.objects.create(
            id=tid, state=states[n % len(states)], owner=people[n % 3],
            input_tokens=400 + 37 * (n % 11) * (n % 3 + 1), output_tokens=30 + 5 * (n % 7),
        )  # fmt: skip
        TaskRecord.objects.filter(pk=tid).update(created_at=at, updated_at=at)
    first = TaskRecord.objects.get(pk="t-history-0")
    for seq, actor in enumerate(["rita"] * 9 + ["sam"] * 5 + ["kim"] * 2):
        TaskEvent.objects.create(
            task=first, seq=100 + seq, kind="answer", to_state="working", actor=actor,
            at=now - timedelta(hours=seq * 5),
        )  # fmt: skip
    tools = [("file_expense", 14, 3), ("lookup_policy", 9, 1), ("send_invoice", 5, 2)]
    for tool, calls, failed in tools:
        for turn in range(calls):
            ToolCallOutcome.objects.create(
                task_id=first.pk, turn=turn, call_id=f"{tool}-{turn}", tool=tool,
                result={"output": "", "is_error": turn < failed},
            )  # fmt: skip
    hook = PushConfig.objects.create(task=first, config_id="ops", url="https://hooks.example/a")
    PushConfig.objects.create(
        task=first, config_id="old", url="https://hooks.example/b", disabled_at=now
    )
    for seq, outcome in enumerate(["delivered"] * 24 + ["retry"] * 3 + ["gave-up"]):
        PushDelivery.objects.create(
            config=hook, seq=seq, notification_id=f"n{seq}", outcome=outcome
        )


def test_the_dashboard_draws_every_chart_from_a_workload(
    page: Any,
    live_server: Any,
    rpc: RpcClient,
    configure: Any,
    fake_llm: FakeLLM,
    django_user_model: Any,
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    configure(fake_llm, store="django")
    workload(rpc, fake_llm)
    history(django_user_model)
    django_user_model.objects.create_superuser("olga", "olga@example.com", "ops-pw")

    log_in(page, live_server.url, "olga", "ops-pw")
    page.get_by_role("link", name="Dashboard", exact=True).click()  # the index's entry
    expect(page.locator("h1")).to_have_text("Dashboard")
    expect(page.locator("#tnx-queue-size")).to_have_text("1")
    charts = page.locator("svg.tnx-chart")
    expect(charts).to_have_count(7)
    for n in range(7):  # each is drawn: it has a size and some marks
        box = charts.nth(n).bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 40
        assert charts.nth(n).locator("rect").count() > 0
    # The numbers behind a chart unfold beneath it.
    tokens = page.locator("section", has_text="Tokens per owner")
    tokens.locator("summary").click()
    expect(tokens.locator("tbody tr").first.locator("th")).to_have_text("carol")
    page.click("#toggle-nav-sidebar")  # more room for the screenshot
    tokens.locator("summary").click()  # folded again
    full_page_screenshot(page, screenshots(tmp_path) / "dashboard.png")
