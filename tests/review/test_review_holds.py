"""A reviewer "holds" a Task (issue 20; "claim" is a worker's word): what
was stored before the rename still reads — a hold kept as ``"claim"`` in
the private review notes, ``review_claim`` events with decision ``"claim"``
— in the lifecycle, the wire's readers, the queue's filter and the
decisions list, without rewriting a row."""

from __future__ import annotations

import copy
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.admin.test_review_admin import staff
from tests.review.test_review_moves import waiting
from tests.utils import approval, events_of, task_in
from toolnexus_django import lifecycle
from toolnexus_django.a2a.dialects import Dialect
from toolnexus_django.a2a.follow import event_messages
from toolnexus_django.lifecycle import states
from toolnexus_django.lifecycle.events import Event, current
from toolnexus_django.models import TaskEvent
from toolnexus_django.push.delivery import notifications
from toolnexus_django.review.holds import end_hold, hold_task, start_hold
from toolnexus_django.review.reviewers import hold_of
from toolnexus_django.stores import DjangoTaskStore, InMemoryTaskStore, TaskStore
from toolnexus_django.stores.base import Task

QUEUE = "admin:toolnexus_django_awaitinghumantask_changelist"
DECISIONS = "admin:toolnexus_django_taskdecision_changelist"
RECORD = "admin:toolnexus_django_taskrecord_change"


def stored_as_claim(store: TaskStore, task: Task, by: str, *, ago: float = 0) -> Task:
    """``task`` with ``by``'s hold written the way versions before the rename
    wrote it (``review.claim``), by the store's own compare-and-set."""
    private = lifecycle.read(task)
    at = (timezone.now() - timedelta(seconds=ago)).isoformat()
    private.review = {**(private.review or {}), "claim": {"by": by, "at": at}}
    older = copy.deepcopy(task)
    lifecycle.write(older, private)
    assert store.compare_and_set(task, older)
    return older


def old_claim_event(task_id: str = "t-1") -> dict[str, Any]:
    return {
        "task_id": task_id, "seq": 4, "kind": "review_claim", "from_state": "input-required",
        "to_state": "input-required", "at": "2026-11-30T10:00:00+00:00", "actor": "rita",
        "actor_kind": "user", "via": "admin",
        "public": {"status": {"state": "input-required"}},
        "private": {"decision": "claim", "request": "approve-1", "kind": "approval"},
    }  # fmt: skip


def test_a_hold_stored_as_a_claim_holds_lapses_and_ends_as_a_hold(settings: Any) -> None:
    settings.TOOLNEXUS = {"REVIEW": {"HOLD_SECONDS": 60}}
    store = InMemoryTaskStore()
    task = stored_as_claim(store, waiting(store), "rita")
    held = hold_of(task)
    assert held is not None and held["by"] == "rita"
    assert hold_of(task, timezone.now() + timedelta(seconds=61)) is None  # it lapses the same
    with pytest.raises(lifecycle.AnswerRefused) as refused:
        start_hold(store, task, reviewer="sam")
    assert (refused.value.reason, str(refused.value)) == (
        "held",
        "This task is being reviewed by rita.",
    )
    taken = start_hold(store, task, reviewer="sam", take_over=True)
    assert taken is not None
    assert set(lifecycle.read(taken.task).review or {}) == {"hold"}  # the old key is gone
    assert taken.event is not None and taken.event["private"]["took_over_from"] == "rita"

    again = stored_as_claim(store, waiting(store), "rita")
    released = end_hold(store, again, reviewer="rita")
    assert released is not None and hold_of(released.task) is None
    assert lifecycle.read(released.task).review == {}


def test_an_event_stored_as_review_claim_reads_as_a_hold_and_stays_off_the_wire() -> None:
    old = old_claim_event()
    event = Event.from_dict(old)
    assert (event.kind, event.private["decision"]) == ("review_hold", "hold")
    assert old["kind"] == "review_claim"  # read, not rewritten
    assert event.kind in states.UNSEEN
    task = {"id": "t-1", "status": {"state": "input-required"}}
    assert list(event_messages(event, task, Dialect.V10)) == []
    assert notifications(SimpleNamespace(dialect="0.3"), task, event) == []
    other = {**old, "kind": "claim", "private": {}}  # a worker's claim: not renamed
    assert current(other) is other


@pytest.mark.django_db
def test_the_admin_reads_holds_and_hold_events_stored_before_the_rename(
    django_user_model: Any,
) -> None:
    rita = staff(django_user_model, "rita", "answer_task")
    store = DjangoTaskStore()
    mine = str(task_in("input-required", store=store, request=approval("approve-m"))["id"])
    old = str(task_in("input-required", store=store, request=approval("approve-o"))["id"])
    hold_task(mine, rita)  # held now: a review_hold event, its private "hold"
    stored_as_claim(store, store.get(old) or {}, "rita")  # held before the rename
    # The event of a hold made before the rename, as that version stored it.
    made = TaskEvent.objects.filter(task_id=mine, kind="review_hold")
    assert made.update(kind="review_claim", private={"decision": "claim"}) == 1
    as_rita = Client()
    as_rita.force_login(rita)

    held = as_rita.get(reverse(QUEUE), {"held": "mine"}).context["cl"].result_list
    assert {str(r.pk) for r in held} == {mine, old}
    assert not as_rita.get(reverse(QUEUE), {"held": "none"}).context["cl"].result_list

    listed = as_rita.get(reverse(DECISIONS), {"decision": "hold"})
    assert [(r.task_id, r.kind) for r in listed.context["cl"].result_list] == [
        (mine, "review_claim")
    ]
    assert b">held<" in listed.content
    page = as_rita.get(reverse(RECORD, args=[mine])).content.decode()
    assert "tnx-event-review_hold" in page and "tnx-event-review_claim" not in page
    assert [e["kind"] for e in events_of(mine)][-1] == "review_claim"  # the row as stored
