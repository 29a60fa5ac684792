"""The read-only Task admin."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.utils import approval, task_in
from toolnexus_django import review
from toolnexus_django.lifecycle import Verdict
from toolnexus_django.models import TaskRecord
from toolnexus_django.stores import DjangoTaskStore

pytestmark = pytest.mark.django_db


def test_changelist_filters_by_state_and_pages_render(admin_client: Any) -> None:
    store = DjangoTaskStore()
    waiting = task_in("input-required", text="needs a person", store=store)
    done = task_in("completed", text="all good", result="the answer", store=store)

    url = reverse("admin:toolnexus_django_taskrecord_changelist")
    page = admin_client.get(url)
    assert page.status_code == 200
    assert waiting["id"] in page.content.decode() and done["id"] in page.content.decode()

    filtered = admin_client.get(url, {"state__exact": "input-required"}).content.decode()
    assert waiting["id"] in filtered and done["id"] not in filtered

    detail = admin_client.get(
        reverse("admin:toolnexus_django_taskrecord_change", args=[done["id"]])
    ).content.decode()
    assert "the answer" in detail


def test_tasks_cannot_be_added_or_edited_from_the_admin(admin_client: Any) -> None:
    task = task_in("submitted", store=DjangoTaskStore())
    assert admin_client.get(reverse("admin:toolnexus_django_taskrecord_add")).status_code == 403
    change = reverse("admin:toolnexus_django_taskrecord_change", args=[task["id"]])
    admin_client.post(change, {"state": "completed"})
    assert TaskRecord.objects.get(pk=task["id"]).state == "submitted"


# -- the review queue's helpers ------------------------------------------------

OPENAI_TRANSCRIPT = [
    {"role": "system", "content": "be useful"},
    {"role": "user", "content": "file 12 and 7"},
    {
        "role": "assistant",
        "content": "Filing both.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "a", "arguments": '{"n": 12}'}},
            {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "not json"}},
            {"id": "c3", "type": "function", "function": {"name": "c", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "done 12"},
    {"role": "tool", "tool_call_id": "c2", "content": "Approve 7?"},
]

ANTHROPIC_TRANSCRIPT = [
    {"role": "user", "content": [{"type": "text", "text": "file 12 and 7"}]},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Filing both."},
            {"type": "tool_use", "id": "u1", "name": "a", "input": {"n": 12}},
            {"type": "tool_use", "id": "u2", "name": "b", "input": {"n": 7}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "u1", "content": "done 12"},
            {
                "type": "tool_result",
                "tool_use_id": "u2",
                "content": [{"type": "text", "text": "Approve 7?"}],
                "is_error": True,
            },
        ],
    },
]


def test_the_halted_call_is_the_one_of_the_last_tool_result() -> None:
    from toolnexus_django.admin import halted_call

    call = halted_call(OPENAI_TRANSCRIPT, "openai")
    assert call is not None and (call.id, call.name, call.args) == ("c2", "b", "not json")
    call = halted_call(ANTHROPIC_TRANSCRIPT, "anthropic")
    assert call is not None and (call.id, call.name, call.args) == ("u2", "b", {"n": 7})
    assert halted_call(None, "openai") is None
    assert halted_call(OPENAI_TRANSCRIPT[:3], "openai") is None
    assert halted_call("garbage", "openai") is None


@pytest.mark.parametrize(
    ("transcript", "style"),
    [(OPENAI_TRANSCRIPT, "openai"), (ANTHROPIC_TRANSCRIPT, "anthropic")],
)
def test_both_transcript_shapes_read_as_the_same_turns(transcript: Any, style: str) -> None:
    from toolnexus_django.admin import transcript_turns

    turns = [t for t in transcript_turns(transcript, style) if t.role != "system"]
    assert [t.role for t in turns][:2] == ["user", "assistant"]
    assert turns[0].texts == ["file 12 and 7"]
    assert turns[1].texts == ["Filing both."]
    assert [c.name for c in turns[1].calls][:2] == ["a", "b"]
    results = [r for t in turns for r in t.results]
    assert [(r.name, r.content) for r in results] == [("a", "done 12"), ("b", "Approve 7?")]
    assert [r.halted for r in results] == [False, True]


def test_only_absolute_web_urls_are_linkable() -> None:
    from toolnexus_django.admin import safe_link_url

    assert safe_link_url("https://login.example.com/x") == "https://login.example.com/x"
    assert safe_link_url(" HTTP://example.com ") == "HTTP://example.com"
    for bad in ("javascript:alert(1)", "data:text/html,x", "//evil.example", "/admin/", None, 3):
        assert safe_link_url(bad) is None


def test_time_left() -> None:
    from datetime import timedelta

    from django.utils import timezone

    from toolnexus_django.admin import time_left

    now = timezone.now()
    assert time_left(None) == "never"
    assert time_left(now - timedelta(seconds=1), now) == "expired"
    assert time_left(now + timedelta(hours=2), now) == "in 2\xa0hours"


def test_the_timeline_shows_on_every_task_page(admin_client: Any) -> None:
    from toolnexus import Answer

    store = DjangoTaskStore()
    task = task_in("input-required", store=store, request=approval("r-1"))
    review.answer(
        store,
        task,
        Verdict(
            Answer(id="r-1", ok=False, reason="declined"),
            decision="decline",
            actor="rita",
            comment="not <this> one",
        ),
    )
    page = admin_client.get(reverse("admin:toolnexus_django_taskrecord_change", args=[task["id"]]))
    body = page.content.decode()
    assert "rita" in body and "decline" in body and "not &lt;this&gt; one" in body
    assert "input-required &rarr; working" in body or "input-required → working" in body
    # Every move is on it, in order: submit, claim, suspend, answer.
    kinds = [k for k in ("submit", "claim", "suspend", "answer") if f"tnx-event-{k}" in body]
    assert kinds == ["submit", "claim", "suspend", "answer"]
    assert body.index("tnx-event-submit") < body.index("tnx-event-answer")
