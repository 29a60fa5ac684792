"""Reviewers' moves on a waiting Task, in the lifecycle (no admin, no HTTP):
claims and their lapse, four eyes, edit-then-approve, and that none of them
reaches the wire."""

from __future__ import annotations

import copy
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.utils import timezone
from toolnexus import Answer

from tests.utils import approval, halted_transcript
from toolnexus_django import lifecycle, review
from toolnexus_django.a2a.dialects import Dialect
from toolnexus_django.a2a.follow import Follower, event_messages
from toolnexus_django.lifecycle import Verdict, states
from toolnexus_django.lifecycle.events import Event
from toolnexus_django.lifecycle.messages import text_part
from toolnexus_django.push.delivery import notifications
from toolnexus_django.review.holds import end_hold, start_hold
from toolnexus_django.review.reminders import mark_sent
from toolnexus_django.review.reviewers import approvals_of, hold_of
from toolnexus_django.stores import InMemoryTaskStore
from toolnexus_django.stores.base import Task, state_of

EXPENSE_SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "number"}, "description": {"type": "string"}},
    "required": ["amount", "description"],
}
#: Stands in for the toolkit's Tool (what suspend reads of it: its source and schema).
EXPENSE_TOOL = SimpleNamespace(name="file_expense", source="native", input_schema=EXPENSE_SCHEMA)


def waiting(store: InMemoryTaskStore, *, tool: Any = EXPENSE_TOOL) -> Task:
    message = {"role": "user", "parts": [text_part("file my taxi")]}
    task = lifecycle.submit(store, message, owner="alice", text="file my taxi").task
    running = lifecycle.claim(store, task, worker="w1")
    assert running is not None
    transcript = halted_transcript()
    transcript[1]["tool_calls"][0]["function"]["arguments"] = (
        '{"amount": 42.5, "description": "Taxi"}'
    )
    moved = lifecycle.suspend(
        store, running.task, approval(), transcript=transcript, style="openai", tool=tool
    )
    assert moved is not None
    return moved.task


def approve(store: InMemoryTaskStore, task: Task, who: str, **kw: Any) -> lifecycle.Moved:
    given = Answer(id="approve-1", ok=True)
    return review.answer(store, task, Verdict(given, decision="approve", actor=who, **kw))


def kinds(store: InMemoryTaskStore, task: Task) -> list[str]:
    return [e["kind"] for e in store.events(task["id"])]


# -- what suspension records for review -----------------------------------------------------


def test_suspension_records_the_halted_tool_its_schema_and_the_skill_loaded() -> None:
    store = InMemoryTaskStore()
    task = waiting(store)
    halt = lifecycle.read(task).halt
    assert halt == {
        "tool": "file_expense",
        "arguments": {"amount": 42.5, "description": "Taxi"},
        "source": "native",
        "schema": EXPENSE_SCHEMA,
        "skill": "",
    }


# -- claims -------------------------------------------------------------------------------------


def test_a_claim_names_its_reviewer_and_refuses_another_until_taken_over() -> None:
    store = InMemoryTaskStore()
    task = waiting(store)
    claimed = start_hold(store, task, reviewer="rita")
    assert claimed is not None
    held = hold_of(claimed.task)
    assert held is not None and held["by"] == "rita"
    assert state_of(claimed.task) == states.INPUT_REQUIRED  # still waiting

    with pytest.raises(lifecycle.AnswerRefused) as refused:
        start_hold(store, claimed.task, reviewer="sam")
    assert refused.value.reason == "held"
    assert "being reviewed by rita" in str(refused.value)

    taken = start_hold(store, claimed.task, reviewer="sam", take_over=True)
    assert taken is not None and hold_of(taken.task)["by"] == "sam"  # type: ignore[index]
    assert taken.event is not None and taken.event["private"]["took_over_from"] == "rita"
    assert kinds(store, task)[-2:] == ["review_hold", "review_hold"]


def test_two_reviewers_claiming_the_same_version_one_wins() -> None:
    store = InMemoryTaskStore()
    task = waiting(store)
    first = start_hold(store, copy.deepcopy(task), reviewer="rita")
    second = start_hold(store, copy.deepcopy(task), reviewer="sam")
    assert first is not None and second is None
    assert hold_of(store.get(task["id"]))["by"] == "rita"  # type: ignore[index]


def test_a_claim_lapses_after_claim_seconds(settings: Any) -> None:
    settings.TOOLNEXUS = {"REVIEW": {"HOLD_SECONDS": 60}}
    store = InMemoryTaskStore()
    claimed = start_hold(store, waiting(store), reviewer="rita")
    assert claimed is not None
    now = timezone.now()
    assert hold_of(claimed.task, now + timedelta(seconds=59)) is not None
    assert hold_of(claimed.task, now + timedelta(seconds=61)) is None


def test_a_release_drops_the_claim_and_cannot_drop_someone_elses() -> None:
    store = InMemoryTaskStore()
    claimed = start_hold(store, waiting(store), reviewer="rita")
    assert claimed is not None
    with pytest.raises(lifecycle.AnswerRefused):
        end_hold(store, claimed.task, reviewer="sam")
    released = end_hold(store, claimed.task, reviewer="rita")
    assert released is not None and hold_of(released.task) is None


def test_an_answer_drops_the_claim() -> None:
    store = InMemoryTaskStore()
    claimed = start_hold(store, waiting(store), reviewer="rita")
    assert claimed is not None
    answered = approve(store, claimed.task, "rita")
    assert lifecycle.read(answered.task).review is None


# -- four eyes ---------------------------------------------------------------------------------


def test_four_eyes_needs_two_different_reviewers_before_the_run_resumes(settings: Any) -> None:
    settings.TOOLNEXUS = {"REVIEW": {"APPROVALS": {"file_expense": 2}}}
    store = InMemoryTaskStore()
    task = waiting(store)

    first = approve(store, task, "rita", comment="receipt checked")
    assert first.event is not None and first.event["kind"] == "review_approval"
    assert state_of(first.task) == states.INPUT_REQUIRED
    assert lifecycle.phase_of(first.task) == states.WAITING
    assert [a["by"] for a in approvals_of(first.task)] == ["rita"]
    assert first.event["private"]["approvals"] == 1 and first.event["private"]["needed"] == 2

    with pytest.raises(lifecycle.AnswerRefused) as again:
        approve(store, first.task, "rita")
    assert again.value.reason == "already-approved"

    second = approve(store, first.task, "sam")
    assert second.event is not None and second.event["kind"] == "answer"
    assert second.event["private"]["approvers"] == ["rita", "sam"]
    assert lifecycle.phase_of(second.task) == states.ANSWERED
    # The wire says approved once, for the Request, whoever approved it.
    assert [o["outcome"] for o in second.task["metadata"]["requests"]] == ["approved"]


def test_four_eyes_a_single_decline_ends_it_and_anonymous_approvals_do_not_count(
    settings: Any,
) -> None:
    settings.TOOLNEXUS = {"REVIEW": {"APPROVALS": {"file_expense": 2}}}
    store = InMemoryTaskStore()
    task = waiting(store)
    with pytest.raises(lifecycle.AnswerRefused) as nameless:
        review.answer(store, task, Verdict(Answer(id="approve-1", ok=True), decision="approve"))
    assert nameless.value.reason == "not-allowed"
    first = approve(store, task, "rita")
    declined = review.answer(
        store,
        first.task,
        Verdict(Answer(id="approve-1", ok=False, reason="no"), decision="decline", actor="sam"),
    )
    assert declined.event is not None and declined.event["kind"] == "answer"
    assert declined.task["metadata"]["requests"][0]["outcome"] == "declined"


def test_tools_not_named_need_one_approval(settings: Any) -> None:
    settings.TOOLNEXUS = {"REVIEW": {"APPROVALS": {"wire_money": 2}}}
    store = InMemoryTaskStore()
    assert approve(store, waiting(store), "rita").event["kind"] == "answer"  # type: ignore[index]


# -- edit, then approve ------------------------------------------------------------------------


def test_an_edited_approval_rewrites_the_call_and_records_both_versions() -> None:
    store = InMemoryTaskStore()
    task = waiting(store)
    edited = {"amount": 40.0, "description": "Taxi (tip not covered)"}
    moved = approve(store, task, "rita", arguments=edited)
    call = lifecycle.read(moved.task).transcript[1]["tool_calls"][0]  # type: ignore[index]
    assert call["function"]["arguments"] == (
        '{"amount": 40.0, "description": "Taxi (tip not covered)"}'
    )
    assert moved.event is not None
    assert moved.event["private"]["arguments"] == {
        "before": {"amount": 42.5, "description": "Taxi"},
        "after": edited,
    }


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        pytest.param({"amount": "forty"}, "input schema", id="against-the-schema"),
        pytest.param(["not", "an", "object"], "JSON object", id="not-an-object"),
    ],
)
def test_edited_arguments_that_break_the_tools_schema_are_refused(
    arguments: Any, said: str
) -> None:
    store = InMemoryTaskStore()
    task = waiting(store)
    before = store.get(task["id"])
    with pytest.raises(lifecycle.AnswerRefused) as refused:
        approve(store, task, "rita", arguments=arguments)
    assert refused.value.reason == "invalid" and said in str(refused.value)
    assert store.get(task["id"]) == before


def test_no_edit_without_the_tools_schema_on_a_decline_or_when_turned_off(settings: Any) -> None:
    store = InMemoryTaskStore()
    unknown = waiting(store, tool=None)  # the toolkit did not have the tool
    with pytest.raises(lifecycle.AnswerRefused):
        approve(store, unknown, "rita", arguments={"amount": 1, "description": "x"})
    task = waiting(store)
    with pytest.raises(lifecycle.AnswerRefused):
        review.answer(
            store,
            task,
            Verdict(
                Answer(id="approve-1", ok=False),
                decision="decline",
                actor="rita",
                arguments={"amount": 1, "description": "x"},
            ),
        )
    settings.TOOLNEXUS = {"REVIEW": {"EDIT_ARGUMENTS": False}}
    with pytest.raises(lifecycle.AnswerRefused):
        approve(store, task, "rita", arguments={"amount": 1, "description": "x"})


def test_four_eyes_calls_cannot_be_edited(settings: Any) -> None:
    settings.TOOLNEXUS = {"REVIEW": {"APPROVALS": {"file_expense": 2}}}
    store = InMemoryTaskStore()
    with pytest.raises(lifecycle.AnswerRefused) as refused:
        approve(store, waiting(store), "rita", arguments={"amount": 1, "description": "x"})
    assert "every reviewer must approve the same call" in str(refused.value)


# -- never on the wire ---------------------------------------------------------------------------


def test_reviewers_moves_send_nothing_on_a_stream_or_a_push() -> None:
    store = InMemoryTaskStore()
    task = waiting(store)
    seq = lifecycle.read(task).seq
    follower = Follower(task, Dialect.V10, after=None)
    follower.opening()
    claimed = start_hold(store, task, reviewer="rita")
    assert claimed is not None
    reminded = mark_sent(store, claimed.task, "remind")
    assert reminded is not None
    events, current = follower.read(store)
    assert [e.kind for e in events] == ["review_hold", "remind"]
    assert follower.take(events, current) == []
    assert follower.position.seq == seq + 2
    row = SimpleNamespace(dialect="0.3")
    for raw in store.events(task["id"], after=seq):
        event = Event.from_dict(raw)
        assert list(event_messages(event, current or task, Dialect.V10)) == []
        assert notifications(row, current or task, event) == []


def test_a_reminder_is_marked_once() -> None:
    store = InMemoryTaskStore()
    task = waiting(store)
    first = mark_sent(store, copy.deepcopy(task), "remind")
    assert first is not None
    assert mark_sent(store, copy.deepcopy(task), "remind") is None  # lost the race
    assert mark_sent(store, first.task, "remind") is None  # already sent
    assert mark_sent(store, first.task, "escalate") is not None
