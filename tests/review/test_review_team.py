"""Review at team scale, without a browser: claims and their races, bulk
decisions and their races, edit-then-approve, four eyes, "review next", and
every decision in Django's admin log and the decisions list (issue 13).

The Tasks are made with the lifecycle's own verbs on the django store; the
admin is driven with Django's test client; races run on real threads against
the real database."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client
from django.urls import reverse
from toolnexus import Answer

from tests.admin.test_review_admin import flashed, staff
from tests.utils import approval, events_of, halted_transcript, private_of, task_in
from toolnexus_django import lifecycle
from toolnexus_django.lifecycle.requests import AnswerRefused
from toolnexus_django.review import answer_task
from toolnexus_django.review.bulk import decidable_in_bulk, decide_many
from toolnexus_django.review.holds import hold_task
from toolnexus_django.review.reviewers import hold_of

QUEUE = "admin:toolnexus_django_awaitinghumantask_changelist"
REVIEW = "admin:toolnexus_django_awaitinghumantask_review"
HOLD = "admin:toolnexus_django_awaitinghumantask_hold"
RELEASE = "admin:toolnexus_django_awaitinghumantask_release"
NEXT = "admin:toolnexus_django_awaitinghumantask_next"
DECISIONS = "admin:toolnexus_django_taskdecision_changelist"
HISTORY = "admin:toolnexus_django_taskrecord_history"

EXPENSE_SCHEMA = {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "title": "Amount"},
        "description": {"type": "string", "title": "Description"},
    },
    "required": ["amount", "description"],
}
EXPENSE_TOOL = SimpleNamespace(name="file_expense", source="native", input_schema=EXPENSE_SCHEMA)


def waiting_expense(text: str = "file my taxi", **kw: Any) -> str:
    """A waiting expense approval whose call asked for 42.5 for a taxi."""
    transcript = halted_transcript()
    transcript[1]["tool_calls"][0]["function"]["arguments"] = (
        '{"amount": 42.5, "description": "Taxi to the airport"}'
    )
    request = approval(f"approve-{text}")
    request["prompt"] = f"Approve: {text}?"
    task = task_in(
        "input-required", text=text, request=request, transcript=transcript, tool=EXPENSE_TOOL,
        **kw,
    )  # fmt: skip
    return str(task["id"])


def together(*calls: Callable[[], Any]) -> list[Any]:
    """Run ``calls`` on threads released at the same instant; their results
    (or the exceptions they raised), in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int, call: Callable[[], Any]) -> None:
        from django.db import connection

        barrier.wait(timeout=10)
        try:
            results[i] = call()
        except Exception as exc:  # the caller asserts on it
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
        assert not t.is_alive()
    return results


@pytest.fixture
def rita(django_user_model: Any) -> Any:
    return staff(django_user_model, "rita", "answer_task")


@pytest.fixture
def sam(django_user_model: Any) -> Any:
    return staff(django_user_model, "sam", "answer_task")


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def log_of(task_id: str) -> list[str]:
    return [
        e.change_message
        for e in LogEntry.objects.filter(object_id=task_id).order_by("action_time", "id")
    ]


# -- claims ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_claiming_at_once_one_wins(rita: Any, sam: Any) -> None:
    for _ in range(3):  # the race goes either way; every round has one winner
        task_id = waiting_expense()
        first, second = together(
            lambda t=task_id: hold_task(t, rita), lambda t=task_id: hold_task(t, sam)
        )
        won = [r for r in (first, second) if not isinstance(r, Exception)]
        lost = [r for r in (first, second) if isinstance(r, Exception)]
        assert len(won) == 1 and len(lost) == 1
        assert isinstance(lost[0], AnswerRefused) and lost[0].reason == "held"
        holder = hold_of(won[0])
        assert holder is not None and f"reviewed by {holder['by']}" in str(lost[0])
        assert [e["kind"] for e in events_of(task_id)].count("review_hold") == 1


@pytest.mark.django_db
def test_claim_release_and_take_over_in_the_admin_each_in_the_admin_log(
    rita: Any, sam: Any
) -> None:
    task_id = waiting_expense()
    as_rita, as_sam = client_for(rita), client_for(sam)
    assert as_rita.post(reverse(HOLD, args=[task_id])).status_code == 302
    page = as_sam.get(reverse(REVIEW, args=[task_id]))
    assert page.context["held_by_other"] and b"Being reviewed by rita" in page.content
    queue = as_sam.get(reverse(QUEUE)).content.decode()
    assert "being reviewed by rita" in queue

    # Sam claiming is refused (he can take over instead); rita releases.
    refused = as_sam.post(reverse(HOLD, args=[task_id]))
    assert "being reviewed by rita" in flashed(as_sam.get(refused.url))[0][1]
    as_rita.post(reverse(RELEASE, args=[task_id]))
    assert hold_of(private_task(task_id)) is None
    as_rita.post(reverse(HOLD, args=[task_id]))
    as_sam.post(reverse(HOLD, args=[task_id]), {"take_over": "1"})
    assert hold_of(private_task(task_id))["by"] == "sam"  # type: ignore[index]
    assert [m.split(" “")[0] for m in log_of(task_id)] == [
        "Held", "Released", "Held", "Took over",
    ]  # fmt: skip
    # GET is never a claim.
    assert as_sam.get(reverse(HOLD, args=[task_id])).status_code == 405


def private_task(task_id: str) -> Any:
    from toolnexus_django.stores import get_task_store

    return get_task_store().get(task_id)


@pytest.mark.django_db
def test_answering_a_task_another_reviewer_holds_needs_a_confirmation(rita: Any, sam: Any) -> None:
    task_id = waiting_expense()
    hold_task(task_id, rita)
    as_sam = client_for(sam)
    request_id = private_of(task_id).pending["id"]  # type: ignore[index]
    form = {"_answer": "approve", "request_id": request_id}
    warned = as_sam.post(reverse(REVIEW, args=[task_id]), form)
    assert warned.status_code == 200 and warned.context["confirm_hold"]
    assert b"Answer anyway: rita is reviewing this task" in warned.content
    assert lifecycle.phase_of(private_task(task_id)) == lifecycle.states.WAITING

    done = as_sam.post(reverse(REVIEW, args=[task_id]), {**form, "_confirm_held": "1"})
    assert done.status_code == 302
    assert lifecycle.phase_of(private_task(task_id)) == lifecycle.states.ANSWERED


# -- bulk ---------------------------------------------------------------------------------------


def test_what_a_bulk_decision_fits() -> None:
    assert decidable_in_bulk({"kind": "approval", "data": {"schema": EXPENSE_SCHEMA}})
    assert not decidable_in_bulk({"kind": "authorization"})
    assert not decidable_in_bulk({"kind": "input"})  # a free-text question
    assert not decidable_in_bulk({"kind": "input", "data": {"schema": EXPENSE_SCHEMA}})
    assert decidable_in_bulk({"kind": "input", "data": {"schema": {"type": "object"}}})


@pytest.mark.django_db
def test_bulk_approve_in_the_admin_confirms_then_answers_each_and_reports_the_rest(
    rita: Any, sam: Any
) -> None:
    ids = [waiting_expense(f"claim {n}") for n in range(3)]
    held = waiting_expense("held by sam")
    hold_task(held, sam)
    free_text = {"id": "q1", "kind": "input", "prompt": "Which city?"}
    question = str(task_in("input-required", request=free_text)["id"])
    as_rita = client_for(rita)
    selected = {"action": "approve_selected", "_selected_action": [*ids, held, question]}
    confirm = as_rita.post(reverse(QUEUE), selected)
    assert confirm.status_code == 200 and b"Yes, approve them" in confirm.content
    assert all(lifecycle.phase_of(private_task(i)) == lifecycle.states.WAITING for i in ids)

    done = as_rita.post(reverse(QUEUE), {**selected, "_confirm": "1", "comment": "Batch OK"})
    assert done.status_code == 302
    said = [text for _, text in flashed(as_rita.get(done.url))]
    assert said[0].startswith("Approved 3 tasks")
    assert any("being reviewed by sam" in s for s in said)
    assert any("needs an answer of its own" in s for s in said)
    for task_id in ids:
        answers = [e for e in events_of(task_id) if e["kind"] == "answer"]
        assert [(a["actor"], a["via"], a["private"]["comment"]) for a in answers] == [
            ("rita", "admin-bulk", "Batch OK")
        ]
        text = private_of(task_id).input_text
        assert log_of(task_id) == [f"Approved “Approve: {text}?” in bulk — comment: “Batch OK”"]
    for untouched in (held, question):
        assert lifecycle.phase_of(private_task(untouched)) == lifecycle.states.WAITING


@pytest.mark.django_db
def test_bulk_decisions_need_the_answer_permission(django_user_model: Any) -> None:
    viewer = staff(django_user_model, "vera", "view_taskrecord")
    task_id = waiting_expense()
    page = client_for(viewer).get(reverse(QUEUE))
    assert b"approve_selected" not in page.content
    client_for(viewer).post(
        reverse(QUEUE),
        {"action": "approve_selected", "_selected_action": [task_id], "_confirm": "1"},
    )
    assert lifecycle.phase_of(private_task(task_id)) == lifecycle.states.WAITING


@pytest.mark.django_db(transaction=True)
def test_a_bulk_approve_racing_single_answers_answers_each_task_exactly_once(
    rita: Any, sam: Any
) -> None:
    ids = [waiting_expense(f"race {n}") for n in range(6)]

    def singles() -> list[str]:
        answered = []
        for task_id in reversed(ids):  # from the other end: they meet in the middle
            pending = private_of(task_id).pending or {}
            try:
                answer_task(
                    task_id, Answer(id=pending.get("id"), ok=False, reason="declined"),
                    decision="decline", user=sam,
                )  # fmt: skip
                answered.append(task_id)
            except AnswerRefused:
                pass
        return answered

    bulk, single = together(lambda: decide_many(ids, "approve", rita), singles)
    assert not isinstance(bulk, Exception) and not isinstance(single, Exception)
    assert sorted(bulk.answered + single) == sorted(ids)  # every Task answered, by one of them
    assert not set(bulk.answered) & set(single)
    for task_id in ids:
        answers = [e for e in events_of(task_id) if e["kind"] == "answer"]
        assert len(answers) == 1
        who = "rita" if task_id in bulk.answered else "sam"
        assert answers[0]["actor"] == who
    # What the bulk decision left alone, it reports as answered by the other.
    assert {i for i, _ in bulk.skipped} == set(single)
    assert all("already answered" in why or "no longer waiting" in why for _, why in bulk.skipped)


# -- edit, then approve; four eyes -----------------------------------------------------------


@pytest.mark.django_db
def test_edit_then_approve_in_the_admin_keeps_both_versions(rita: Any) -> None:
    task_id = waiting_expense()
    as_rita = client_for(rita)
    page = as_rita.get(reverse(REVIEW, args=[task_id]))
    edit = page.context["forms"]["edit"]
    assert edit.initial == {"amount": 42.5, "description": "Taxi to the airport"}
    request_id = private_of(task_id).pending["id"]  # type: ignore[index]
    form = {"_answer": "edit", "request_id": request_id, "edit-amount": "forty"}
    bad = as_rita.post(reverse(REVIEW, args=[task_id]), form)
    assert bad.status_code == 200 and bad.context["forms"]["edit"].errors
    form.update({"edit-amount": "40", "edit-description": "Taxi (no tip)", "edit-comment": "Tip"})
    assert as_rita.post(reverse(REVIEW, args=[task_id]), form).status_code == 302
    [answer] = [e for e in events_of(task_id) if e["kind"] == "answer"]
    assert answer["private"]["arguments"] == {
        "before": {"amount": 42.5, "description": "Taxi to the airport"},
        "after": {"amount": 40.0, "description": "Taxi (no tip)"},
    }
    assert "(with edited arguments)" in log_of(task_id)[-1]
    call = private_of(task_id).transcript[1]["tool_calls"][0]  # type: ignore[index]
    assert call["function"]["arguments"] == '{"amount": 40.0, "description": "Taxi (no tip)"}'


@pytest.mark.django_db
def test_four_eyes_in_the_admin_one_of_two_then_the_second_reviewer(
    rita: Any, sam: Any, settings: Any
) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": {"APPROVALS": {"file_expense": 2}}}
    task_id = waiting_expense()
    as_rita, as_sam = client_for(rita), client_for(sam)
    page = as_rita.get(reverse(REVIEW, args=[task_id]))
    assert "edit" not in page.context["forms"]  # every reviewer approves the same call
    request_id = private_of(task_id).pending["id"]  # type: ignore[index]
    form = {"_answer": "approve", "request_id": request_id}
    as_rita.post(reverse(REVIEW, args=[task_id]), form)
    assert lifecycle.phase_of(private_task(task_id)) == lifecycle.states.WAITING
    assert b"1 of 2 approvals" in as_sam.get(reverse(QUEUE)).content
    again = as_rita.post(reverse(REVIEW, args=[task_id]), form)
    assert "already approved" in flashed(as_rita.get(again.url))[-1][1]
    as_sam.post(reverse(REVIEW, args=[task_id]), form)
    assert lifecycle.phase_of(private_task(task_id)) == lifecycle.states.ANSWERED
    kinds = [e["kind"] for e in events_of(task_id)][-2:]
    assert kinds == ["review_approval", "answer"]
    assert log_of(task_id)[0].startswith("Gave the first approval of")


# -- flow and history ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_answer_and_review_next_skips_tasks_others_hold(rita: Any, sam: Any) -> None:
    older = waiting_expense("older")
    held = waiting_expense("held")
    newest = waiting_expense("newest")
    hold_task(held, sam)
    as_rita = client_for(rita)
    request_id = private_of(newest).pending["id"]  # type: ignore[index]
    went = as_rita.post(
        reverse(REVIEW, args=[newest]),
        {"_answer": "approve", "request_id": request_id, "_next": "1"},
    )
    assert went.url == reverse(REVIEW, args=[older])
    assert as_rita.get(reverse(NEXT)).url == reverse(REVIEW, args=[older])


@pytest.mark.django_db
def test_decisions_list_history_page_and_recent_actions(rita: Any, sam: Any) -> None:
    mine, theirs = waiting_expense("mine"), waiting_expense("theirs")
    as_rita = client_for(rita)
    as_rita.post(reverse(HOLD, args=[mine]))
    for task_id, who in ((mine, rita), (theirs, sam)):
        pending = private_of(task_id).pending or {}
        answer_task(task_id, Answer(id=pending["id"], ok=True), decision="approve", user=who)
    listed = as_rita.get(reverse(DECISIONS))
    rows = listed.context["cl"].result_list
    assert {(r.task_id, r.kind, r.actor) for r in rows} >= {
        (mine, "review_hold", "rita"), (mine, "answer", "rita"), (theirs, "answer", "sam"),
    }  # fmt: skip
    only_mine = as_rita.get(reverse(DECISIONS), {"mine": "1"}).context["cl"].result_list
    assert {r.actor for r in only_mine} == {"rita"}
    approved = as_rita.get(reverse(DECISIONS), {"decision": "approve"}).context["cl"].result_list
    assert {r.kind for r in approved} == {"answer"}

    history = as_rita.get(reverse(HISTORY, args=[mine]))
    assert b"Held" in history.content
    index = as_rita.get(reverse("admin:index"))
    assert b"Held" in index.content  # "Recent actions"


def test_an_edited_call_runs_with_the_edited_arguments(
    rpc: Any, configure: Any, fake_llm: Any, rita: Any
) -> None:
    from tests.fakes import Text, ToolCall

    configure(fake_llm)
    fake_llm.push(
        ToolCall("file_expense", {"amount": 42.5, "description": "Taxi"}), Text("Filed it.")
    )
    task_id = rpc.wait(rpc.send("file my taxi: 42.50")["id"])["id"]
    halt = private_of(task_id).halt or {}
    # The schema came from the toolkit's own Tool, at suspension.
    assert halt["tool"] == "file_expense" and "amount" in halt["schema"]["properties"]
    pending = private_of(task_id).pending or {}
    answer_task(
        task_id, Answer(id=pending["id"], ok=True), decision="approve", user=rita,
        arguments={"amount": 40, "description": "Taxi (no tip)"},
    )  # fmt: skip
    assert rpc.wait(task_id, ("completed", "failed"))["status"]["state"] == "completed"
    resumed = fake_llm.requests[1].body["messages"]
    assert resumed[-1]["content"].endswith(": 40 under other.")  # the tool ran with 40
    call = resumed[-2]["tool_calls"][0]["function"]
    assert call["arguments"] == '{"amount": 40, "description": "Taxi (no tip)"}'


@pytest.mark.django_db
def test_an_expiry_is_in_the_admin_log_as_the_named_user_or_not_at_all(
    django_user_model: Any, settings: Any
) -> None:
    from toolnexus_django.review import expire_due

    bot = django_user_model.objects.create_user("review-bot")
    past = {"expiresAt": "2020-01-01T00:00:00Z"}
    request = {**approval("approve-late"), "prompt": "Approve the late one?", **past}
    unlogged = str(task_in("input-required", request=request)["id"])
    assert expire_due() == [unlogged]
    assert log_of(unlogged) == []  # EXPIRY_LOG_USER None: LogEntry needs a user

    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": {"EXPIRY_LOG_USER": "review-bot"}}
    logged = str(task_in("input-required", request={**request, "id": "approve-later"})["id"])
    assert expire_due() == [logged]
    [entry] = LogEntry.objects.filter(object_id=logged)
    assert entry.user == bot
    assert entry.change_message == "Expired “Approve the late one?” (not answered in time)"


@pytest.mark.django_db
def test_the_claimed_filter_reads_live_claims_as_the_column_does(rita: Any, sam: Any) -> None:
    import copy

    from toolnexus_django.stores import get_task_store

    mine, theirs, lapsed, free = (waiting_expense(n) for n in ("mine", "theirs", "lapsed", "free"))
    hold_task(mine, rita)
    hold_task(theirs, sam)
    hold_task(lapsed, rita)
    store = get_task_store()
    task = store.get(lapsed)
    assert task is not None
    private = lifecycle.read(task)
    private.review = {"hold": {"by": "rita", "at": "2020-01-01T00:00:00+00:00"}}
    older = copy.deepcopy(task)
    lifecycle.write(older, private)
    assert store.compare_and_set(task, older)  # rita's claim, long lapsed

    as_rita = client_for(rita)

    def listed(value: str) -> set[str]:
        page = as_rita.get(reverse(QUEUE), {"held": value})
        return {str(r.pk) for r in page.context["cl"].result_list}

    assert listed("mine") == {mine}
    assert listed("others") == {theirs}
    assert listed("none") == {lapsed, free}


@pytest.mark.django_db
def test_a_bulk_approval_of_a_four_eyes_task_is_its_first_approval(
    rita: Any, settings: Any
) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": {"APPROVALS": {"file_expense": 2}}}
    task_id = waiting_expense("two approvals")
    as_rita = client_for(rita)
    form = {"action": "approve_selected", "_selected_action": [task_id], "_confirm": "1"}
    done = as_rita.post(reverse(QUEUE), form)
    said = [text for _, text in flashed(as_rita.get(done.url))]
    assert said == ["1 task took your approval and waits for another reviewer's."]
    assert lifecycle.phase_of(private_task(task_id)) == lifecycle.states.WAITING
    assert log_of(task_id) == ["Gave the first approval of “Approve: two approvals?” in bulk"]
