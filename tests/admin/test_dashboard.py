"""The admin's dashboard (issue 34, item 3): its numbers from a scripted set
of rows — Tasks open and per hour, the review queue, decisions per reviewer,
tool failures, push health, tokens per owner and per day — each chart with
its table; only users with the view permission on Tasks see it, and the
Tasks list and the admin index link to it."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.admin.test_review_admin import staff
from toolnexus_django.admin import charts
from toolnexus_django.models import (
    PushConfig,
    PushDelivery,
    TaskEvent,
    TaskRecord,
    ToolCallOutcome,
)

pytestmark = pytest.mark.django_db

URL = "admin:toolnexus_django_taskrecord_dashboard"


def task(
    id: str, state: str, owner: Any = None, tokens: tuple[int, int] = (0, 0), **at: Any
) -> Any:
    record = TaskRecord.objects.create(
        id=id, state=state, owner=owner, input_tokens=tokens[0], output_tokens=tokens[1]
    )
    if at:  # created_at / updated_at are automatic: set them after
        TaskRecord.objects.filter(pk=id).update(**at)
    return record


def scripted_rows(django_user_model: Any) -> None:
    """Alice's two completed Tasks, Bob's failed and waiting ones, one working
    anonymous Task, and last week's Task (outside every window); answers,
    tool calls and push deliveries around them."""
    now = timezone.now()
    alice = django_user_model.objects.create_user("alice")
    bob = django_user_model.objects.create_user("bob")
    done = task("t-done-1", "completed", alice, (100, 10))
    task("t-done-2", "completed", alice, (50, 5))
    task("t-failed", "failed", bob, (7, 3))
    task("t-waits", "input-required", bob, updated_at=now - timedelta(hours=2))
    task("t-runs", "working")
    task("t-old", "completed", alice, (1000, 100), created_at=now - timedelta(days=8))
    for seq, (actor, ago) in enumerate([("rita", 1), ("rita", 30), ("sam", 2), ("rita", 24 * 9)]):
        TaskEvent.objects.create(
            task=done, seq=seq + 1, kind="answer", to_state="working", actor=actor,
            at=now - timedelta(hours=ago),
        )  # fmt: skip
    for turn, (tool, failed) in enumerate(
        [("file_expense", True), ("file_expense", True), ("file_expense", False), ("lookup", False)]
    ):
        ToolCallOutcome.objects.create(
            task_id="t-done-1", turn=turn, call_id=f"c{turn}", tool=tool,
            result={"output": "x", "is_error": failed},
        )  # fmt: skip
    hook = PushConfig.objects.create(task=done, config_id="a", url="https://example.com/hook")
    PushConfig.objects.create(
        task=done, config_id="b", url="https://example.com/b", failures=2, next_attempt_at=now
    )
    PushConfig.objects.create(task=done, config_id="c", url="https://x.test/", disabled_at=now)
    for seq, outcome in enumerate(["delivered"] * 3 + ["retry"]):
        PushDelivery.objects.create(
            config=hook, seq=seq, notification_id=f"n{seq}", outcome=outcome
        )


def tables(html: str) -> dict[str, list[list[str]]]:
    """Each chart's table by the chart's title: its rows' cells, as text."""
    found = {}
    for title, body in re.findall(
        r'<section[^>]*aria-label="([^"]+)".*?<tbody>(.*?)</tbody>', html, re.S
    ):
        rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
        cells = [
            [unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, re.S)] for r in rows
        ]
        found[unescape(title)] = cells
    return found


def viewer(django_user_model: Any) -> Client:
    client = Client()
    client.force_login(staff(django_user_model, "vic", "view_taskrecord"))
    return client


def test_the_dashboard_shows_the_numbers_of_the_scripted_rows(django_user_model: Any) -> None:
    scripted_rows(django_user_model)
    response = viewer(django_user_model).get(reverse(URL))
    assert response.status_code == 200
    html = response.content.decode()
    shown = tables(html)

    assert shown["Open tasks, by state"] == [
        ["submitted", "0"], ["working", "1"], ["input required", "1"], ["auth required", "0"],
    ]  # fmt: skip
    this_hour = timezone.localtime().strftime("%H:00")
    per_hour = shown["Tasks created per hour, last 24 hours"]
    assert len(per_hour) == 24 and per_hour[-1][0] == this_hour
    headers = re.search(r'aria-label="Tasks created per hour.*?<thead>(.*?)</thead>', html, re.S)
    assert headers is not None
    columns = re.findall(r"<th[^>]*>(.*?)</th>", headers.group(1))
    now_row = dict(zip(columns, per_hour[-1], strict=True))
    assert now_row == {"hour": this_hour, "working": "1", "input-required": "1",
                       "completed": "2", "failed": "1"}  # fmt: skip
    assert all(set(row[1:]) == {"0"} for row in per_hour[:-1])

    assert re.search(r'id="tnx-queue-size">1<', html)
    assert re.search(r'id="tnx-queue-oldest"[^>]*>2\W+hours<', html)
    assert shown["Decisions per reviewer, last 7 days"] == [["rita", "2"], ["sam", "1"]]
    assert shown["Tool failures, last 7 days"] == [["file_expense", "2", "3"], ["lookup", "0", "1"]]
    assert shown["Push deliveries, last 24 hours"] == [
        ["delivered", "3"], ["failed; will retry", "1"],
        ["configs failing now", "1"], ["configs disabled", "1"],
    ]  # fmt: skip
    assert shown["Tokens per owner, last 7 days"] == [
        ["alice", "150", "15"], ["bob", "7", "3"], ["anonymous", "0", "0"],
    ]  # fmt: skip
    per_day = shown["Tokens per day, last 7 days"]
    assert len(per_day) == 7 and per_day[-1][1:] == ["157", "18"]
    assert all(row[1:] == ["0", "0"] for row in per_day[:-1])  # last week's Task is out


def test_each_chart_is_an_svg_with_a_title_and_its_table(django_user_model: Any) -> None:
    scripted_rows(django_user_model)
    html = viewer(django_user_model).get(reverse(URL)).content.decode()
    svgs = re.findall(r'<svg class="tnx-chart" role="img".*?</svg>', html, re.S)
    assert len(svgs) == len(tables(html)) == 7
    assert all(re.search(r"<title id=[^>]+>[^<]+</title><desc id=", svg) for svg in svgs)
    assert "<script" not in html.split('id="content-main"')[1]  # drawn on the server
    assert "http" not in "".join(svgs).replace("http://www.w3.org/2000/svg", "")  # no CDN


def test_a_label_from_a_row_is_escaped_in_the_svg() -> None:
    svg = charts.bars("t", [('<img src=x onerror="alert(1)">', 3)])
    assert "<img" not in svg and "&lt;img" in svg


@pytest.mark.parametrize("perms", [(), ("answer_task",), ("view_awaitinghumantask",)])
def test_without_the_view_permission_on_tasks_the_dashboard_is_refused(
    django_user_model: Any, perms: tuple[str, ...]
) -> None:
    client = Client()
    client.force_login(staff(django_user_model, "stan", *perms))
    assert client.get(reverse(URL)).status_code == 403
    assert client.get(reverse("admin:toolnexus_django_taskdashboard_changelist")).status_code == 403
    assert reverse(URL) not in client.get(reverse("admin:index")).content.decode()


def test_an_anonymous_visitor_is_sent_to_the_login_page() -> None:
    response = Client().get(reverse(URL))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_tasks_list_and_the_admin_index_link_to_the_dashboard(django_user_model: Any) -> None:
    client = viewer(django_user_model)
    tasks = client.get(reverse("admin:toolnexus_django_taskrecord_changelist")).content.decode()
    assert f'href="{reverse(URL)}"' in tasks
    index = client.get(reverse("admin:index")).content.decode()
    entry = reverse("admin:toolnexus_django_taskdashboard_changelist")
    assert f'href="{entry}"' in index
    assert client.get(entry)["Location"] == reverse(URL)
