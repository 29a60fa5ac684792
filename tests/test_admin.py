"""The read-only Task admin."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from toolnexus_django.a2a import shapes
from toolnexus_django.models import TaskRecord
from toolnexus_django.stores import DjangoTaskStore

pytestmark = pytest.mark.django_db


def make_task(text: str, state: str) -> dict[str, Any]:
    message = {"role": "user", "parts": [{"kind": "text", "text": text}]}
    task = shapes.new_task(message, text=text, owner=None)
    return shapes.with_status(task, state) if state != "submitted" else task


def test_changelist_filters_by_state_and_pages_render(admin_client: Any) -> None:
    store = DjangoTaskStore()
    waiting = make_task("needs a person", "input-required")
    done = shapes.completed(make_task("all good", "working"), "the answer")
    store.save(waiting)
    store.save(done)

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
    task = make_task("x", "submitted")
    DjangoTaskStore().save(task)
    assert admin_client.get(reverse("admin:toolnexus_django_taskrecord_add")).status_code == 403
    change = reverse("admin:toolnexus_django_taskrecord_change", args=[task["id"]])
    admin_client.post(change, {"state": "completed"})
    assert TaskRecord.objects.get(pk=task["id"]).state == "submitted"
