"""The lifecycle's verbs as a specification: which move is legal from which
phase (:data:`states.MOVES`), what each legal move leaves behind (state,
phase, event), that an illegal or losing move changes nothing, the
sub-states a ``working`` or waiting Task hides, and the rules an answer
must pass.

No server, no threads, no database: every Task lives in an
:class:`InMemoryTaskStore` made by the test, driven there by the verbs
themselves.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from toolnexus import Answer, Request

from tests.utils import approval, halted_transcript
from toolnexus_django import lifecycle, review
from toolnexus_django.conf import toolnexus_settings
from toolnexus_django.lifecycle import Verdict, states
from toolnexus_django.lifecycle.messages import text_part
from toolnexus_django.lifecycle.moves import CANCELED_TEXT, Moved
from toolnexus_django.lifecycle.requests import REVIEWER_NOTE
from toolnexus_django.review.answering import first_approval
from toolnexus_django.review.holds import end_hold, start_hold
from toolnexus_django.review.reminders import mark_sent
from toolnexus_django.review.reviewers import ANSWER_PERMISSION
from toolnexus_django.stores import InMemoryTaskStore
from toolnexus_django.stores.base import Task, state_of

WORKER = "host-a:1"
OTHER_WORKER = "host-b:2"
PROMPT = "Approve the taxi?"
EITHER = ["reviewer", "requester"]
SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "number"}},
    "required": ["amount"],
}


# -- driving a Task with the verbs ----------------------------------------------------------


def moved(result: Moved | None) -> Task:
    assert result is not None, "the move lost a race nobody else runs"
    return result.task


def submit(store: InMemoryTaskStore, text: str = "file my taxi") -> Task:
    message = {"role": "user", "parts": [text_part(text)]}
    return lifecycle.submit(store, message, owner="alice", text=text).task


def pending_id(task: Task) -> str:
    pending = lifecycle.read(task).pending
    return str((pending or {}).get("id") or "approve-1")


def suspend(store: InMemoryTaskStore, task: Task, request: dict[str, Any] | None = None) -> Task:
    return moved(
        lifecycle.suspend(
            store,
            task,
            request or approval(),
            transcript=halted_transcript(),
            style="openai",
        )
    )


def approve(store: InMemoryTaskStore, task: Task) -> Task:
    given = Answer(id=pending_id(task), ok=True)
    return review.answer(store, task, Verdict(given, decision="approve")).task


def reject_directly(store: InMemoryTaskStore) -> Task:
    """``rejected``: no verb makes it, but a Task stored in it reads as
    phase ``done`` like the other terminal states (written here with the
    store's own compare-and-set, as another writer could)."""
    task = submit(store)
    new = copy.deepcopy(task)
    new["status"] = {"state": states.REJECTED, "timestamp": task["status"]["timestamp"]}
    private = lifecycle.read(task)
    private.phase = states.DONE
    lifecycle.write(new, private)
    assert store.compare_and_set(task, new)
    return new


@dataclass(frozen=True)
class Start:
    """A starting point: a Task in ``phase`` (and public ``state``), built by ``build``."""

    name: str
    phase: str
    state: str
    build: Callable[[InMemoryTaskStore], Task]


def _running(store: InMemoryTaskStore) -> Task:
    return moved(lifecycle.claim(store, submit(store), worker=WORKER))


def _waiting(store: InMemoryTaskStore) -> Task:
    return suspend(store, _running(store))


def _answered(store: InMemoryTaskStore) -> Task:
    return approve(store, _waiting(store))


def _resuming(store: InMemoryTaskStore) -> Task:
    return moved(lifecycle.start_resume(store, _answered(store), worker=OTHER_WORKER))


STARTS = [
    Start("queued", states.QUEUED, states.SUBMITTED, submit),
    Start("running", states.RUNNING, states.WORKING, _running),
    Start("waiting", states.WAITING, states.INPUT_REQUIRED, _waiting),
    Start(
        "waiting-auth",
        states.WAITING,
        states.AUTH_REQUIRED,
        lambda s: suspend(s, _running(s), {**approval(), "kind": "authorization"}),
    ),
    Start("answered", states.ANSWERED, states.WORKING, _answered),
    Start("resuming", states.RESUMING, states.WORKING, _resuming),
    Start(
        "completed",
        states.DONE,
        states.COMPLETED,
        lambda s: moved(lifecycle.complete(s, _running(s), "done")),
    ),
    Start(
        "failed", states.DONE, states.FAILED, lambda s: moved(lifecycle.fail(s, _running(s), "x"))
    ),
    Start(
        "canceled",
        states.DONE,
        states.CANCELED,
        lambda s: moved(lifecycle.cancel(s, submit(s), actor="alice", via="a2a")),
    ),
    Start("rejected", states.DONE, states.REJECTED, reject_directly),
]

#: One caller per move of :data:`states.MOVES` (but ``submit``, which starts
#: from no Task), making it with ordinary arguments.
Verb = Callable[[InMemoryTaskStore, Task], Moved | None]
VERBS: dict[str, Verb] = {
    "claim": lambda s, t: lifecycle.claim(s, t, worker=OTHER_WORKER),
    "renew": lambda s, t: lifecycle.renew(s, t),
    "suspend": lambda s, t: lifecycle.suspend(
        s, t, approval("approve-2"), transcript=halted_transcript(), style="openai"
    ),
    "complete": lambda s, t: lifecycle.complete(s, t, "the result"),
    "fail": lambda s, t: lifecycle.fail(s, t, "it broke"),
    "answer": lambda s, t: review.answer(
        s, t, Verdict(Answer(id=pending_id(t), ok=True), decision="approve")
    ),
    "expire": lambda s, t: lifecycle.expire(s, t),
    "resume": lambda s, t: lifecycle.start_resume(s, t, worker=OTHER_WORKER),
    "cancel": lambda s, t: lifecycle.cancel(s, t, actor="alice", via="a2a"),
    "release": lambda s, t: lifecycle.release(s, t),
    "requeue": lambda s, t: lifecycle.requeue(s, t),
    "give_up": lambda s, t: lifecycle.give_up(s, t),
    "review_hold": lambda s, t: start_hold(s, t, reviewer="rita"),
    "review_release": lambda s, t: end_hold(s, t, reviewer="rita"),
    "review_approval": lambda s, t: first_approval(
        s, t, reviewer="rita", comment="", needed=2, via="admin"
    ),
    "remind": lambda s, t: mark_sent(s, t, "remind"),
    "escalate": lambda s, t: mark_sent(s, t, "escalate"),
}

#: What each legal move leaves: ``(kind, from phase) -> (state, phase)``.
AFTER: dict[tuple[str, str], tuple[str, str]] = {
    ("claim", states.QUEUED): (states.WORKING, states.RUNNING),
    ("renew", states.RUNNING): (states.WORKING, states.RUNNING),
    ("renew", states.RESUMING): (states.WORKING, states.RESUMING),
    ("suspend", states.RUNNING): (states.INPUT_REQUIRED, states.WAITING),
    ("suspend", states.RESUMING): (states.INPUT_REQUIRED, states.WAITING),
    ("complete", states.RUNNING): (states.COMPLETED, states.DONE),
    ("complete", states.RESUMING): (states.COMPLETED, states.DONE),
    ("fail", states.QUEUED): (states.FAILED, states.DONE),
    ("fail", states.RUNNING): (states.FAILED, states.DONE),
    ("fail", states.ANSWERED): (states.FAILED, states.DONE),
    ("fail", states.RESUMING): (states.FAILED, states.DONE),
    ("answer", states.WAITING): (states.WORKING, states.ANSWERED),
    ("expire", states.WAITING): (states.WORKING, states.ANSWERED),
    ("resume", states.ANSWERED): (states.WORKING, states.RESUMING),
    ("cancel", states.QUEUED): (states.CANCELED, states.DONE),
    ("cancel", states.RUNNING): (states.CANCELED, states.DONE),
    ("cancel", states.ANSWERED): (states.CANCELED, states.DONE),
    ("cancel", states.RESUMING): (states.CANCELED, states.DONE),
    ("cancel", states.WAITING): (states.CANCELED, states.DONE),
    ("release", states.RUNNING): (states.SUBMITTED, states.QUEUED),
    ("release", states.RESUMING): (states.WORKING, states.ANSWERED),
    ("requeue", states.RUNNING): (states.SUBMITTED, states.QUEUED),
    ("requeue", states.RESUMING): (states.WORKING, states.ANSWERED),
    ("requeue", states.ANSWERED): (states.WORKING, states.ANSWERED),
    ("give_up", states.RUNNING): (states.FAILED, states.DONE),
    ("give_up", states.RESUMING): (states.FAILED, states.DONE),
    # A reviewer's moves keep the Task waiting (and are never sent on the wire).
    ("review_hold", states.WAITING): (states.INPUT_REQUIRED, states.WAITING),
    ("review_release", states.WAITING): (states.INPUT_REQUIRED, states.WAITING),
    ("review_approval", states.WAITING): (states.INPUT_REQUIRED, states.WAITING),
    ("remind", states.WAITING): (states.INPUT_REQUIRED, states.WAITING),
    ("escalate", states.WAITING): (states.INPUT_REQUIRED, states.WAITING),
}

#: The answer verbs refuse (AnswerRefused), rather than raise IllegalMove,
#: when the Task does not wait: their refusal says whether someone answered.
ANSWER_VERBS = frozenset({"answer", "expire"})


def legal_cases() -> list[Any]:
    return [
        pytest.param(kind, start, id=f"{kind}-from-{start.name}")
        for kind, phases in states.MOVES.items()
        for start in STARTS
        if start.phase in phases
    ]


def illegal_cases() -> list[Any]:
    return [
        pytest.param(kind, start, id=f"{kind}-from-{start.name}")
        for kind, phases in states.MOVES.items()
        if kind != "submit"
        for start in STARTS
        if start.phase not in phases
    ]


def stored(store: InMemoryTaskStore, task: Task) -> Task:
    found = store.get(task["id"])
    assert found is not None
    return found


def status_text(task: Task) -> str:
    return str(task["status"]["message"]["parts"][0]["text"])


Snapshot = tuple[Task, list[dict[str, Any]]]


def snapshot(store: InMemoryTaskStore, task: Task) -> Snapshot:
    """The Task as stored now, and its events."""
    return stored(store, task), store.events(task["id"])


def assert_unchanged(store: InMemoryTaskStore, before: Snapshot) -> None:
    """The store holds exactly ``before``: the same version, no new event."""
    task, events = before
    assert stored(store, task) == task
    assert store.events(task["id"]) == events


# -- the table itself ------------------------------------------------------------------------


def test_every_move_has_a_verb_and_every_phase_a_starting_point() -> None:
    assert set(VERBS) == set(states.MOVES) - {"submit"}
    assert {s.phase for s in STARTS} == set(states.PHASES)
    assert {s.state for s in STARTS} == set(states.STATES)
    assert states.MOVES["submit"] == frozenset(), "submit starts from no Task"


def test_every_legal_move_has_a_stated_outcome() -> None:
    legal = {(kind, phase) for kind, phases in states.MOVES.items() for phase in phases}
    assert set(AFTER) == legal


def test_nothing_leaves_done_and_cancel_leaves_every_other_phase() -> None:
    assert all(states.DONE not in phases for phases in states.MOVES.values())
    assert states.MOVES["cancel"] == set(states.PHASES) - {states.DONE}
    assert states.LEASED == {states.RUNNING, states.RESUMING}


@pytest.mark.parametrize("start", [pytest.param(s, id=s.name) for s in STARTS])
def test_each_starting_point_is_the_phase_and_state_it_claims(start: Start) -> None:
    store = InMemoryTaskStore()
    task = start.build(store)
    assert state_of(stored(store, task)) == start.state
    assert lifecycle.phase_of(stored(store, task)) == start.phase


# -- every legal move ------------------------------------------------------------------------


def test_submit_is_event_one_from_nothing_to_submitted() -> None:
    store = InMemoryTaskStore()
    result = lifecycle.submit(
        store, {"role": "user", "parts": [text_part("hi")]}, owner="alice", text="hi"
    )
    task = stored(store, result.task)
    assert state_of(task) == states.SUBMITTED
    private = lifecycle.read(task)
    assert (private.phase, private.seq, private.owner, private.input_text) == (
        states.QUEUED,
        1,
        "alice",
        "hi",
    )
    event = result.event
    assert event is not None
    assert (event["seq"], event["kind"], event["from_state"], event["to_state"]) == (
        1,
        "submit",
        "",
        states.SUBMITTED,
    )
    assert (event["actor"], event["actor_kind"], event["via"]) == ("alice", "user", "a2a")
    assert store.events(task["id"]) == [event]


@pytest.mark.parametrize(("kind", "start"), legal_cases())
def test_a_legal_move_lands_where_the_table_says_with_its_event(kind: str, start: Start) -> None:
    store = InMemoryTaskStore()
    before = stored(store, start.build(store))
    given = copy.deepcopy(before)
    seq = lifecycle.read(before).seq
    if (kind, start.phase) not in AFTER:
        pytest.fail(f"MOVES allows {kind} from {start.phase}: say where it lands in AFTER")
    state, phase = AFTER[(kind, start.phase)]
    if kind in states.UNSEEN:
        state = start.state  # a reviewer's move keeps whichever waiting state it was

    result = VERBS[kind](store, given)

    assert result is not None
    assert given == before, "a verb never changes the Task it is given"
    after = stored(store, before)
    assert result.task == after, "Moved.task is the Task as stored"
    assert (state_of(after), lifecycle.phase_of(after)) == (state, phase)
    if kind == "renew":
        assert result.event is None
        assert lifecycle.read(after).seq == seq
        assert store.events(before["id"], after=seq) == []
        return
    event = result.event
    assert event is not None
    assert (event["kind"], event["from_state"], event["to_state"], event["seq"]) == (
        kind,
        start.state,
        state,
        seq + 1,
    )
    assert event["task_id"] == before["id"]
    assert event["public"]["status"]["state"] == state
    assert lifecycle.read(after).seq == seq + 1
    assert store.events(before["id"], after=seq) == [event]


# -- every illegal move ---------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "start"), illegal_cases())
def test_an_illegal_move_raises_and_changes_nothing(kind: str, start: Start) -> None:
    store = InMemoryTaskStore()
    before = snapshot(store, start.build(store))
    task = copy.deepcopy(before[0])
    if kind in ANSWER_VERBS:
        with pytest.raises(lifecycle.AnswerRefused) as refusal:
            VERBS[kind](store, task)
        answered = any(e["kind"] in ANSWER_VERBS for e in before[1])
        assert refusal.value.reason == ("already-answered" if answered else "not-waiting")
    else:
        with pytest.raises(lifecycle.IllegalMove) as illegal:
            VERBS[kind](store, task)
        assert (illegal.value.kind, illegal.value.state, illegal.value.phase) == (
            kind,
            start.state,
            start.phase,
        )
    assert_unchanged(store, before)


# -- a lost race ------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "start"), legal_cases())
def test_two_callers_from_the_same_version_one_moves_the_other_loses(
    kind: str, start: Start
) -> None:
    store = InMemoryTaskStore()
    before = stored(store, start.build(store))
    seq = lifecycle.read(before).seq

    first = VERBS[kind](store, copy.deepcopy(before))
    if kind in ANSWER_VERBS:
        # An answer that lost is refused as already answered, never None.
        with pytest.raises(lifecycle.AnswerRefused) as refused:
            VERBS[kind](store, copy.deepcopy(before))
        assert refused.value.reason == "already-answered"
        second = None
    else:
        second = VERBS[kind](store, copy.deepcopy(before))

    assert isinstance(first, Moved)
    assert second is None
    assert stored(store, before) == first.task
    made = 0 if kind == "renew" else 1
    assert [e["seq"] for e in store.events(before["id"], after=seq)] == [seq + 1] * made


def test_a_worker_completing_and_a_person_canceling_the_same_version_one_wins() -> None:
    store = InMemoryTaskStore()
    running = _running(store)
    canceled = lifecycle.cancel(store, copy.deepcopy(running), actor="alice", via="a2a")
    completed = lifecycle.complete(store, copy.deepcopy(running), "too late")
    assert canceled is not None
    assert completed is None
    task = stored(store, running)
    assert state_of(task) == states.CANCELED
    assert "artifacts" not in task
    assert [(e["seq"], e["kind"]) for e in store.events(task["id"])] == [
        (1, "submit"),
        (2, "claim"),
        (3, "cancel"),
    ]


def test_two_workers_claiming_one_task_only_the_first_holds_it() -> None:
    store = InMemoryTaskStore()
    queued = submit(store)
    first = lifecycle.claim(store, copy.deepcopy(queued), worker=WORKER)
    second = lifecycle.claim(store, copy.deepcopy(queued), worker=OTHER_WORKER)
    assert first is not None
    assert second is None
    private = lifecycle.read(stored(store, queued))
    assert private.lease is not None
    assert (private.lease.owner, private.worker, private.attempts) == (WORKER, WORKER, 1)
    assert [e["kind"] for e in store.events(queued["id"], after=1)] == ["claim"]


# -- the sub-states, made explicit --------------------------------------------------------


def test_claim_runs_it_with_the_workers_lease_and_one_more_attempt() -> None:
    store = InMemoryTaskStore()
    queued = submit(store)
    earliest = timezone.now()
    result = lifecycle.claim(store, queued, worker=WORKER)
    assert result is not None
    private = lifecycle.read(stored(store, queued))
    assert private.phase == states.RUNNING
    assert private.lease is not None
    assert private.lease.owner == WORKER
    until = private.lease.expires()
    assert until is not None
    lease = timedelta(seconds=float(toolnexus_settings.LEASE_SECONDS))
    assert earliest + lease <= until <= timezone.now() + lease
    assert (private.worker, private.attempts) == (WORKER, 1)
    assert result.event is not None
    assert (result.event["actor"], result.event["actor_kind"], result.event["via"]) == (
        WORKER,
        "worker",
        "worker",
    )
    assert result.event["private"] == {"attempt": 1, "segment_attempt": 1}


def test_renew_extends_the_lease_without_an_event() -> None:
    store = InMemoryTaskStore()
    running = _running(store)
    old = lifecycle.read(running).lease
    assert old is not None
    result = lifecycle.renew(store, running)
    assert result is not None
    assert result.event is None
    new = lifecycle.read(stored(store, running)).lease
    assert new is not None
    assert new.owner == WORKER
    old_until, new_until = old.expires(), new.expires()
    assert old_until is not None
    assert new_until is not None
    assert new_until >= old_until
    assert len(store.events(running["id"])) == 2


def test_suspend_waits_without_a_lease_and_keeps_the_request_server_side() -> None:
    store = InMemoryTaskStore()
    running = _running(store)
    request = approval(schema=SCHEMA)
    request["expiresAt"] = "2999-01-01T00:00:00+00:00"
    transcript = halted_transcript()
    result = lifecycle.suspend(store, running, request, transcript=transcript, style="openai")
    assert result is not None
    task = stored(store, running)
    private = lifecycle.read(task)
    assert (state_of(task), private.phase, private.lease) == (
        states.INPUT_REQUIRED,
        states.WAITING,
        None,
    )
    assert private.worker == WORKER, "who ran it last is kept"
    assert (private.pending, private.transcript, private.style) == (request, transcript, "openai")
    assert task["status"]["message"]["parts"] == [
        text_part("Approve?"),
        text_part(REVIEWER_NOTE),
        {
            "kind": "data",
            "data": {
                "request": {
                    "kind": "approval",
                    "answeredBy": ["reviewer"],
                    "schema": SCHEMA,
                    "expiresAt": "2999-01-01T00:00:00+00:00",
                }
            },
        },
    ]
    public = json.dumps(lifecycle.public_task(task))
    assert "approve-1" not in public, "the Request's id never leaves the server"
    assert "tool_calls" not in public, "nor does the transcript"
    assert result.event is not None
    assert result.event["private"] == {
        "request": "approve-1",
        "kind": "approval",
        "tool": "file_expense",
    }


def test_suspend_on_a_request_the_requester_may_answer_has_no_reviewer_note() -> None:
    store = InMemoryTaskStore()
    running = _running(store)
    request = Request(id="ask-1", kind="input", prompt=PROMPT)  # a toolnexus dataclass
    result = lifecycle.suspend(
        store, running, request, transcript=halted_transcript(), style="openai"
    )
    assert result is not None
    parts = result.task["status"]["message"]["parts"]
    assert parts == [
        text_part(PROMPT),
        {"kind": "data", "data": {"request": {"kind": "input", "answeredBy": EITHER}}},
    ]
    assert lifecycle.read(result.task).pending == {
        "id": "ask-1",
        "kind": "input",
        "prompt": PROMPT,
        "url": None,
        "data": None,
        "expiresAt": None,
    }


def test_suspend_on_an_authorization_is_auth_required() -> None:
    store = InMemoryTaskStore()
    task = suspend(store, _running(store), {**approval(), "kind": "authorization"})
    assert state_of(task) == states.AUTH_REQUIRED
    assert lifecycle.phase_of(task) == states.WAITING


def test_answer_keeps_the_answer_and_moves_the_question_to_the_history() -> None:
    store = InMemoryTaskStore()
    waiting = _waiting(store)
    question = waiting["status"]["message"]
    reply = {"kind": "message", "role": "user", "messageId": "m-2", "parts": [text_part("ok")]}
    given = Answer(id="approve-1", ok=True, data={"note": "fine"})
    result = review.answer(
        store,
        waiting,
        Verdict(given, decision="approve", actor="rita", comment="looks right", message=reply),
    )
    task = stored(store, waiting)
    private = lifecycle.read(task)
    assert (state_of(task), private.phase, private.lease) == (
        states.WORKING,
        states.ANSWERED,
        None,
    )
    assert private.answer == {
        "id": "approve-1",
        "ok": True,
        "data": {"note": "fine"},
        "reason": None,
    }
    assert "message" not in task["status"]
    assert task["history"][-2:] == [question, reply]
    assert private.pending is not None, "the Request stays until the resumed run ends"
    assert private.transcript == halted_transcript()
    assert result.event is not None
    assert (result.event["actor"], result.event["actor_kind"], result.event["via"]) == (
        "rita",
        "user",
        "admin",
    )
    assert result.event["private"] == {
        "decision": "approve",
        "role": "reviewer",
        "ok": True,
        "data": {"note": "fine"},
        "reason": None,
        "comment": "looks right",
        "request": "approve-1",
        "kind": "approval",
    }


def test_start_resume_takes_the_answered_task_with_a_lease_and_one_more_attempt() -> None:
    store = InMemoryTaskStore()
    answered = _answered(store)
    result = lifecycle.start_resume(store, answered, worker=OTHER_WORKER)
    assert result is not None
    private = lifecycle.read(stored(store, answered))
    assert (state_of(result.task), private.phase) == (states.WORKING, states.RESUMING)
    assert private.lease is not None
    assert (private.lease.owner, private.worker, private.attempts) == (
        OTHER_WORKER,
        OTHER_WORKER,
        2,
    )
    assert private.answer is not None, "the answer waits for the resumed run"
    assert result.event is not None
    # The second run in all; the first of the segment the answer started.
    assert result.event["private"] == {"attempt": 2, "segment_attempt": 1}


def test_complete_adds_the_artifact_and_drops_what_only_a_suspended_run_needs() -> None:
    store = InMemoryTaskStore()
    resuming = _resuming(store)
    result = lifecycle.complete(store, resuming, "Filed.", usage={"total_tokens": 7}, turns=2)
    assert result is not None
    task = stored(store, resuming)
    private = lifecycle.read(task)
    assert (state_of(task), private.phase, private.lease) == (
        states.COMPLETED,
        states.DONE,
        None,
    )
    [artifact] = task["artifacts"]
    assert artifact["parts"] == [text_part("Filed.")]
    assert result.event is not None
    assert result.event["public"]["artifacts"] == [artifact["artifactId"]]
    assert task["history"][-1]["role"] == "agent"
    assert task["history"][-1]["parts"] == [text_part("Filed.")]
    assert (private.pending, private.transcript, private.style, private.answer) == (
        None,
        None,
        None,
        None,
    )
    assert (private.usage, private.turns) == ({"total_tokens": 7}, 2)
    assert result.event["actor"] == OTHER_WORKER


def test_complete_cuts_the_text_at_max_output_chars(settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "MAX_OUTPUT_CHARS": 10}
    store = InMemoryTaskStore()
    task = moved(lifecycle.complete(store, _running(store), "x" * 25))
    text = task["artifacts"][0]["parts"][0]["text"]
    assert text.startswith("x" * 10 + "\n\n[output truncated: 25 characters")


def test_fail_says_why_and_keeps_the_error() -> None:
    store = InMemoryTaskStore()
    result = lifecycle.fail(store, _running(store), "the model is down")
    assert result is not None
    private = lifecycle.read(result.task)
    assert status_text(result.task) == "the model is down"
    assert (private.error, private.phase, private.lease) == ("the model is down", states.DONE, None)
    assert result.event is not None
    assert result.event["private"] == {"error": "the model is down"}


def test_release_of_a_first_run_puts_it_back_in_the_queue_and_refunds_the_attempt() -> None:
    store = InMemoryTaskStore()
    running = _running(store)
    result = lifecycle.release(store, running)
    assert result is not None
    task = stored(store, running)
    private = lifecycle.read(task)
    assert (state_of(task), private.phase, private.lease, private.attempts) == (
        states.SUBMITTED,
        states.QUEUED,
        None,
        0,
    )
    assert result.event is not None
    assert (result.event["actor"], result.event["via"]) == (WORKER, "shutdown")


@pytest.mark.parametrize(("kind", "attempts"), [("release", 1), ("requeue", 2)])
def test_release_or_requeue_of_a_resume_leaves_the_answer_waiting(kind: str, attempts: int) -> None:
    store = InMemoryTaskStore()
    resuming = _resuming(store)  # two attempts: the first run and the resume
    result = VERBS[kind](store, resuming)
    assert result is not None
    task = stored(store, resuming)
    private = lifecycle.read(task)
    assert (state_of(task), private.phase, private.lease) == (
        states.WORKING,
        states.ANSWERED,
        None,
    )
    assert private.attempts == attempts, "release refunds the attempt, requeue does not"
    assert private.answer is not None
    assert private.pending is not None


def test_requeue_of_a_first_run_keeps_the_attempt() -> None:
    store = InMemoryTaskStore()
    result = lifecycle.requeue(store, _running(store))
    assert result is not None
    private = lifecycle.read(result.task)
    assert (state_of(result.task), private.phase, private.attempts) == (
        states.SUBMITTED,
        states.QUEUED,
        1,
    )
    assert result.event is not None
    assert (result.event["actor_kind"], result.event["via"]) == ("system", "recovery")
    assert result.event["private"] == {"attempts": 1, "segment_attempts": 1}


def test_requeue_of_an_answered_task_leaves_it_answered() -> None:
    store = InMemoryTaskStore()
    answered = _answered(store)
    result = lifecycle.requeue(store, answered)
    assert result is not None
    private = lifecycle.read(stored(store, answered))
    assert (state_of(result.task), private.phase, private.attempts) == (
        states.WORKING,
        states.ANSWERED,
        1,
    )
    assert private.answer == lifecycle.read(answered).answer
    assert result.event is not None
    assert (result.event["from_state"], result.event["to_state"]) == ("working", "working")


# A resume after a clean suspension is its segment's first attempt: "once".
@pytest.mark.parametrize(("build", "said"), [(_running, "once"), (_resuming, "once")])
def test_give_up_fails_it_with_the_interrupted_message(
    build: Callable[[InMemoryTaskStore], Task], said: str
) -> None:
    store = InMemoryTaskStore()
    leased = build(store)
    attempts = lifecycle.read(leased).segment_attempts
    result = lifecycle.give_up(store, leased)
    assert result is not None
    task = stored(store, leased)
    assert state_of(task) == states.FAILED
    assert status_text(task) == lifecycle.interrupted_message(attempts)
    assert f"({said})" in status_text(task)
    assert lifecycle.read(task).error == lifecycle.interrupted_message(attempts)
    assert result.event is not None
    assert (result.event["kind"], result.event["actor"], result.event["via"]) == (
        "give_up",
        "system",
        "recovery",
    )


@pytest.mark.parametrize(
    "start", [pytest.param(s, id=s.name) for s in STARTS if s.phase != states.DONE]
)
def test_cancel_from_every_phase_but_done_ends_it_canceled(start: Start) -> None:
    store = InMemoryTaskStore()
    before = start.build(store)
    result = lifecycle.cancel(store, before, actor="alice", via="a2a")
    assert result is not None
    task = stored(store, before)
    private = lifecycle.read(task)
    assert (state_of(task), private.phase, private.lease) == (states.CANCELED, states.DONE, None)
    assert status_text(task) == CANCELED_TEXT
    assert (private.pending, private.transcript, private.answer) == (None, None, None)
    assert result.event is not None
    assert (result.event["from_state"], result.event["actor"]) == (start.state, "alice")
    assert result.event["private"] == {"decision": "cancel"}


# -- answers that are refused change nothing ------------------------------------------------


@dataclass
class StandInUser:
    """Just what ``answer`` asks of a reviewer: no database."""

    username: str
    is_active: bool = True
    perms: frozenset[str] = field(default_factory=frozenset)

    def has_perm(self, perm: str) -> bool:
        return perm in self.perms

    def get_username(self) -> str:
        return self.username


def refused(store: InMemoryTaskStore, task: Task, given: Answer, **kw: Any) -> str:
    """The reason ``answer`` gives for refusing ``given``; asserts nothing changed."""
    before = snapshot(store, task)
    kw.setdefault("decision", "approve")
    with pytest.raises(lifecycle.AnswerRefused) as refusal:
        review.answer(store, copy.deepcopy(task), Verdict(given, **kw))
    assert_unchanged(store, before)
    return refusal.value.reason


def test_an_answer_for_another_request_is_refused() -> None:
    store = InMemoryTaskStore()
    waiting = _waiting(store)
    assert refused(store, waiting, Answer(id="approve-9", ok=True)) == "wrong-request"


def test_an_answer_to_a_task_that_does_not_wait_is_refused() -> None:
    store = InMemoryTaskStore()
    queued = submit(store)
    assert refused(store, queued, Answer(id="approve-1", ok=True)) == "not-waiting"


def test_an_answer_after_another_answer_is_refused_as_already_answered() -> None:
    store = InMemoryTaskStore()
    answered = _answered(store)
    assert refused(store, answered, Answer(id="approve-1", ok=False)) == "already-answered"


def test_the_requester_may_not_answer_an_approval_by_default() -> None:
    store = InMemoryTaskStore()
    waiting = _waiting(store)
    given = Answer(id="approve-1", ok=True)
    assert refused(store, waiting, given, role="requester") == "not-allowed"


def test_the_requester_may_answer_an_input_request() -> None:
    store = InMemoryTaskStore()
    waiting = suspend(store, _running(store), {"id": "ask-1", "kind": "input", "prompt": "?"})
    given = Answer(id="ask-1", ok=True, data={"output": "blue"})
    result = review.answer(
        store, waiting, Verdict(given, decision="reply", role="requester", actor="alice", via="a2a")
    )
    assert lifecycle.phase_of(result.task) == states.ANSWERED


def test_data_that_breaks_the_schema_is_refused_with_the_violations() -> None:
    store = InMemoryTaskStore()
    waiting = suspend(store, _running(store), approval(schema=SCHEMA))
    before = snapshot(store, waiting)
    with pytest.raises(lifecycle.AnswerRefused) as refusal:
        review.answer(
            store,
            waiting,
            Verdict(Answer(id="approve-1", ok=True, data={"amount": "lots"}), decision="approve"),
        )
    assert refusal.value.reason == "invalid"
    assert [v["path"] for v in refusal.value.violations] == ["/amount"]
    assert_unchanged(store, before)
    # A decline carries no data to check.
    declined = Answer(id="approve-1", ok=False, reason="declined")
    assert review.answer(store, waiting, Verdict(declined, decision="decline")).event is not None


@pytest.mark.parametrize(
    "user",
    [
        pytest.param(StandInUser("rita"), id="without-the-permission"),
        pytest.param(
            StandInUser("rita", is_active=False, perms=frozenset({ANSWER_PERMISSION})),
            id="inactive",
        ),
    ],
)
def test_a_reviewer_without_the_permission_is_refused(user: StandInUser) -> None:
    store = InMemoryTaskStore()
    waiting = _waiting(store)
    assert refused(store, waiting, Answer(id="approve-1", ok=True), user=user) == "not-permitted"


def test_a_reviewer_with_the_permission_answers_as_themself() -> None:
    store = InMemoryTaskStore()
    waiting = _waiting(store)
    user = StandInUser("rita", perms=frozenset({ANSWER_PERMISSION}))
    result = review.answer(
        store, waiting, Verdict(Answer(id="approve-1", ok=True), decision="approve", user=user)
    )
    assert result.event is not None
    assert (result.event["actor"], result.event["actor_kind"]) == ("rita", "user")


def test_unknown_decisions_and_roles_are_programming_errors() -> None:
    store = InMemoryTaskStore()
    waiting = _waiting(store)
    before = snapshot(store, waiting)
    with pytest.raises(ValueError, match="unknown decision"):
        review.answer(store, waiting, Verdict(Answer(id="approve-1", ok=True), decision="maybe"))
    with pytest.raises(ValueError, match="unknown role"):
        review.answer(
            store,
            waiting,
            Verdict(Answer(id="approve-1", ok=True), decision="approve", role="peer"),
        )
    assert_unchanged(store, before)


def test_expire_answers_no_as_the_system_whoever_may_answer(settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "ANSWERERS": {"approval": ["requester"]}}
    store = InMemoryTaskStore()
    waiting = suspend(store, _running(store), approval(schema=SCHEMA))
    assert refused(store, waiting, Answer(id="approve-1", ok=True)) == "not-allowed"
    result = lifecycle.expire(store, waiting)
    private = lifecycle.read(stored(store, waiting))
    assert private.answer == {"id": "approve-1", "ok": False, "data": None, "reason": "expired"}
    assert private.phase == states.ANSWERED
    event = result.event
    assert event is not None
    assert (event["kind"], event["actor_kind"], event["via"]) == ("expire", "system", "expiry")
    assert (event["private"]["decision"], event["private"]["role"]) == ("expire", "system")
    assert (event["private"]["ok"], event["private"]["reason"]) == (False, "expired")


# -- a whole life ------------------------------------------------------------------------------


def test_events_are_contiguous_from_one_along_a_full_path() -> None:
    store = InMemoryTaskStore()
    task = submit(store)
    task = moved(lifecycle.claim(store, task, worker=WORKER))
    task = suspend(store, task, approval("approve-1"))
    task = approve(store, task)
    task = moved(lifecycle.start_resume(store, task, worker=WORKER))
    task = suspend(store, task, approval("approve-2"))
    # The first Request was answered; an answer to it now is told so.
    assert refused(store, task, Answer(id="approve-1", ok=True)) == "already-answered"
    task = lifecycle.expire(store, task).task
    task = moved(lifecycle.start_resume(store, task, worker=OTHER_WORKER))
    task = moved(lifecycle.complete(store, task, "Filed."))

    events = store.events(task["id"])
    assert [e["seq"] for e in events] == list(range(1, 10))
    assert [e["kind"] for e in events] == [
        "submit",
        "claim",
        "suspend",
        "answer",
        "resume",
        "suspend",
        "expire",
        "resume",
        "complete",
    ]
    assert [e["to_state"] for e in events] == [
        "submitted",
        "working",
        "input-required",
        "working",
        "working",
        "input-required",
        "working",
        "working",
        "completed",
    ]
    assert events[0]["from_state"] == ""
    for earlier, later in itertools.pairwise(events):
        assert later["from_state"] == earlier["to_state"]
    final = stored(store, task)
    assert events[-1]["to_state"] == state_of(final)
    assert lifecycle.read(final).seq == 9
    assert lifecycle.read(final).attempts == 3
    assert events[6]["private"]["request"] == "approve-2"
