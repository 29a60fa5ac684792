"""One answer is one command, :class:`toolnexus_django.lifecycle.Verdict`
(issue 20): ``review.decide_task(task_id, verdict)`` is the door, and the
documented keyword form ``review.answer_task(...)`` builds the same command."""

from __future__ import annotations

from typing import Any

import pytest
from toolnexus import Answer

from tests.admin.test_review_admin import staff
from tests.utils import approval, events_of, task_in
from toolnexus_django import lifecycle, review
from toolnexus_django.review import Verdict, answer_task, decide_task
from toolnexus_django.stores import DjangoTaskStore

#: What an answer event records that is the same for two Tasks answered alike.
SAME = ("kind", "from_state", "to_state", "actor", "actor_kind", "via")


def answer_event(task_id: str) -> dict[str, Any]:
    [event] = [e for e in events_of(task_id) if e["kind"] == "answer"]
    private = {k: v for k, v in event["private"].items() if k != "request"}
    return {**{k: event[k] for k in SAME}, "private": private}


@pytest.mark.django_db
def test_the_keyword_form_and_the_command_make_the_same_answer(django_user_model: Any) -> None:
    rita = staff(django_user_model, "rita", "answer_task")
    store = DjangoTaskStore()
    by_keywords, by_command = (
        str(task_in("input-required", store=store, request=approval(f"approve-{n}"))["id"])
        for n in (1, 2)
    )
    said = {"decision": "decline", "user": rita, "comment": "no receipt", "via": "admin"}
    answer_task(by_keywords, Answer(id="approve-1", ok=False, reason="declined"), **said)
    verdict = Verdict(Answer(id="approve-2", ok=False, reason="declined"), **said)
    saved = decide_task(by_command, verdict)
    assert lifecycle.phase_of(saved) == lifecycle.states.ANSWERED
    assert answer_event(by_keywords) == answer_event(by_command)
    assert answer_event(by_command)["actor"] == "rita"  # the user's name, as actor
    assert answer_event(by_command)["private"]["comment"] == "no receipt"


def test_a_verdict_is_one_frozen_value_checked_when_made() -> None:
    verdict = Verdict(Answer(id="r", ok=True), "approve", actor="rita")
    assert review.Verdict is lifecycle.Verdict
    assert (verdict.role, verdict.via, verdict.by) == ("reviewer", "admin", "rita")
    with pytest.raises(AttributeError):
        verdict.decision = "decline"  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown decision"):
        Verdict(Answer(id="r", ok=True), "maybe")
    with pytest.raises(ValueError, match="unknown role"):
        Verdict(Answer(id="r", ok=True), "approve", role="peer")
