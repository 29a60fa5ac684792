"""Reminders and escalations of Requests nearing expiry (issue 13, item 7):
sent once — also with two sweepers at the same time — by Django mail and by
signal, never before their time, never for a Task answered meanwhile, and
mail trouble never touches a Task. Every sweep is given its clock (``now=``)."""

from __future__ import annotations

import smtplib
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core import mail
from django.db import connection
from django.utils import timezone
from toolnexus import Answer

from tests.utils import events_of, task_in
from toolnexus_django import lifecycle
from toolnexus_django.fulfilment.sweep import EXTRA_SWEEPS, sweep_once
from toolnexus_django.lifecycle import Verdict
from toolnexus_django.review import answer, remind_due
from toolnexus_django.signals import review_escalation, review_reminder
from toolnexus_django.stores import DjangoTaskStore, InMemoryTaskStore, TaskStore, get_task_store
from toolnexus_django.stores.base import Task

BEFORE = 600.0  # REMIND_BEFORE
AFTER = 300.0  # ESCALATE_AFTER
PROMPT = "Approve the taxi of 12.50?"


REVIEW = {
    "REMIND_BEFORE": BEFORE,
    "REMIND_EMAILS": ["team@example.com"],
    "ESCALATE_AFTER": AFTER,
    "ESCALATE_EMAILS": ["boss@example.com"],
}


@pytest.fixture
def review(settings: Any) -> Callable[..., None]:
    """Reminders on (the django store); ``review(**keys)`` changes REVIEW keys."""

    def apply(**changes: Any) -> None:
        settings.TOOLNEXUS = {
            **settings.TOOLNEXUS,
            "STORE": "django",
            "REVIEW": {
                "NOTIFY_EMAILS": ["first@example.com"],
                "BASE_URL": "https://ops.example.com",
                **REVIEW,
                **changes,
            },
        }

    apply()
    return apply


@pytest.fixture
def sent() -> Iterator[dict[str, list[dict[str, Any]]]]:
    """What each signal was sent with, by signal."""
    got: dict[str, list[dict[str, Any]]] = {"remind": [], "escalate": []}

    def on_remind(sender: Any, **kwargs: Any) -> None:
        got["remind"].append(kwargs)

    def on_escalate(sender: Any, **kwargs: Any) -> None:
        got["escalate"].append(kwargs)

    review_reminder.connect(on_remind, dispatch_uid="test-remind")
    review_escalation.connect(on_escalate, dispatch_uid="test-escalate")
    yield got
    review_reminder.disconnect(dispatch_uid="test-remind")
    review_escalation.disconnect(dispatch_uid="test-escalate")


def waiting(store: TaskStore | None = None, *, expires_in: float = 3600) -> tuple[Task, datetime]:
    """A Task waiting on an approval that expires ``expires_in`` seconds from now."""
    deadline = (timezone.now() + timedelta(seconds=expires_in)).replace(microsecond=0)
    request = {
        "id": "approve-1",
        "kind": "approval",
        "prompt": PROMPT,
        "expiresAt": deadline.isoformat().replace("+00:00", "Z"),
    }
    return task_in("input-required", request=request, store=store), deadline


def kinds(task_id: str, store: TaskStore | None = None) -> list[str]:
    return [e["kind"] for e in events_of(task_id, store)]


def in_window(deadline: datetime) -> datetime:
    return deadline - timedelta(seconds=BEFORE - 1)


# -- once, with two sweepers ---------------------------------------------------------------


class SlowReader(DjangoTaskStore):
    """A sweeper's store whose first read waits for the other sweeper's: both
    hold the same version of the Task before either records the reminder."""

    def __init__(self, gate: threading.Barrier) -> None:
        super().__init__()
        self.gate: threading.Barrier | None = gate

    def get(self, id: str) -> Task | None:
        task = super().get(id)
        gate, self.gate = self.gate, None
        if gate is not None:
            gate.wait(timeout=10)
        return task


@pytest.mark.django_db(transaction=True)
def test_a_reminder_is_sent_once_with_two_sweepers(review: Any, sent: Any) -> None:
    task, deadline = waiting()
    now = in_window(deadline)
    start, read = threading.Barrier(2), threading.Barrier(2)
    results: list[dict[str, Any]] = []
    failures: list[BaseException] = []

    def sweeper() -> None:
        try:
            start.wait(timeout=10)
            results.append(remind_due(SlowReader(read), now=now))
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=sweeper) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert failures == [] and len(results) == 2
    assert sorted(len(r["reminded"]) for r in results) == [0, 1]
    assert len(mail.outbox) == 1 and len(sent["remind"]) == 1
    assert kinds(task["id"]).count("remind") == 1
    # A later sweep finds it sent.
    assert remind_due(now=now + timedelta(seconds=1))["reminded"] == []
    assert len(mail.outbox) == 1 and len(sent["remind"]) == 1


# -- when ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_nothing_before_the_window(review: Any, sent: Any) -> None:
    task, deadline = waiting()
    early = deadline - timedelta(seconds=BEFORE + 1)
    assert remind_due(now=early) == {"reminded": [], "escalated": []}
    assert mail.outbox == [] and sent["remind"] == []
    assert "remind" not in kinds(task["id"])

    assert remind_due(now=in_window(deadline))["reminded"] == [task["id"]]
    [reminder] = mail.outbox
    assert reminder.to == ["team@example.com"]
    assert "Expires soon" in reminder.subject and PROMPT[:20] in reminder.subject
    assert PROMPT in reminder.body and deadline.isoformat() in reminder.body
    assert "https://ops.example.com/admin/toolnexus_django/awaitinghumantask/" in reminder.body
    [signal] = sent["remind"]
    assert signal["task_id"] == task["id"] and signal["expires_at"] == deadline
    assert signal["request"]["prompt"] == PROMPT
    assert signal["task"]["status"]["state"] == "input-required"
    assert "_private" not in signal["task"]  # the public Task


@pytest.mark.django_db
def test_an_escalation_follows_after_the_further_delay_once_to_the_other_list(
    review: Any, sent: Any
) -> None:
    task, deadline = waiting()
    reminded_at = in_window(deadline)
    remind_due(now=reminded_at)
    assert remind_due(now=reminded_at + timedelta(seconds=AFTER - 1))["escalated"] == []
    assert len(mail.outbox) == 1

    late = reminded_at + timedelta(seconds=AFTER)
    assert remind_due(now=late) == {"reminded": [], "escalated": [task["id"]]}
    assert remind_due(now=late + timedelta(seconds=1))["escalated"] == []
    reminder, escalation = mail.outbox
    assert reminder.to == ["team@example.com"] and escalation.to == ["boss@example.com"]
    assert "Escalated" in escalation.subject and PROMPT in escalation.body
    assert len(sent["remind"]) == 1 and len(sent["escalate"]) == 1
    assert kinds(task["id"])[-2:] == ["remind", "escalate"]
    review_state = lifecycle.read(DjangoTaskStore().get(task["id"])).review or {}
    assert review_state["reminded"] == reminded_at.isoformat()
    assert review_state["escalated"] == late.isoformat()


@pytest.mark.django_db
def test_no_escalation_without_escalate_after(review: Any, sent: Any) -> None:
    review(ESCALATE_AFTER=None)
    _, deadline = waiting()
    remind_due(now=in_window(deadline))
    assert remind_due(now=deadline - timedelta(seconds=1))["escalated"] == []
    assert len(mail.outbox) == 1 and sent["escalate"] == []


@pytest.mark.django_db
def test_nothing_once_expired(review: Any, sent: Any) -> None:
    # Past expiry the sweep answers it "expired": no "expires soon" mail then.
    task, _ = waiting(expires_in=-1)
    assert remind_due(now=timezone.now()) == {"reminded": [], "escalated": []}
    assert mail.outbox == [] and "remind" not in kinds(task["id"])


# -- answered meanwhile ---------------------------------------------------------------------


def approve(store: TaskStore, task: Task) -> None:
    given = Answer(id="approve-1", ok=True)
    assert answer(store, task, Verdict(given, decision="approve", actor="rita"))


@pytest.mark.django_db
def test_no_reminder_for_a_task_answered_meanwhile(review: Any, sent: Any) -> None:
    store = DjangoTaskStore()
    task, deadline = waiting(store)
    approve(store, task)
    assert remind_due(store, now=in_window(deadline)) == {"reminded": [], "escalated": []}

    # Answered between the sweep's read and its mark: the mark is refused.
    second, deadline = waiting(store)

    class AnsweredAfterRead(DjangoTaskStore):
        def get(self, id: str) -> Task | None:
            read = super().get(id)
            approve(store, read)  # type: ignore[arg-type]
            return read

    assert remind_due(AnsweredAfterRead(), now=in_window(deadline))["reminded"] == []
    assert mail.outbox == [] and sent["remind"] == []
    assert "remind" not in kinds(second["id"])


# -- signals, mail trouble ------------------------------------------------------------------


@pytest.mark.django_db
def test_the_signals_are_sent_without_any_address(review: Any, sent: Any, settings: Any) -> None:
    review(REMIND_EMAILS=None, ESCALATE_EMAILS=[], NOTIFY_EMAILS=[])
    task, deadline = waiting()
    remind_due(now=in_window(deadline))
    remind_due(now=in_window(deadline) + timedelta(seconds=AFTER))
    assert mail.outbox == []
    assert [s["task_id"] for s in sent["remind"]] == [task["id"]]
    assert [s["task_id"] for s in sent["escalate"]] == [task["id"]]


@pytest.mark.django_db
def test_remind_emails_none_means_the_review_notify_list(review: Any) -> None:
    review(REMIND_EMAILS=None)
    _, deadline = waiting()
    remind_due(now=in_window(deadline))
    assert [m.to for m in mail.outbox] == [["first@example.com"]]


@pytest.mark.django_db
def test_the_old_top_level_keys_are_still_read(settings: Any) -> None:
    """REVIEW_NOTIFY_EMAILS and REVIEW_BASE_URL moved into REVIEW (NOTIFY_EMAILS,
    BASE_URL): written the old way they still work (check W101 warns); where
    both are written, REVIEW's own key wins."""
    old = {"REVIEW_NOTIFY_EMAILS": ["old@example.com"], "REVIEW_BASE_URL": "https://old.example"}
    review = {**REVIEW, "REMIND_EMAILS": None}
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, **old, "STORE": "django", "REVIEW": review}
    task, deadline = waiting()
    remind_due(now=in_window(deadline))
    [reminder] = mail.outbox
    assert reminder.to == ["old@example.com"]
    assert f"https://old.example/admin/toolnexus_django/awaitinghumantask/{task['id']}/" in (
        reminder.body
    )

    mail.outbox.clear()
    review = {**review, "NOTIFY_EMAILS": ["new@example.com"], "BASE_URL": "https://new.example"}
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": review}
    task, deadline = waiting()
    remind_due(now=in_window(deadline))
    [reminder] = mail.outbox
    assert reminder.to == ["new@example.com"]
    assert "https://new.example/admin/" in reminder.body


@pytest.mark.django_db
def test_mail_trouble_and_a_raising_receiver_do_not_break_the_sweep(
    review: Any, sent: Any, monkeypatch: Any, caplog: Any
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise smtplib.SMTPException("relay down")

    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("chat is down")

    monkeypatch.setattr("toolnexus_django.review.reminders.send_mail", refuse)
    review_reminder.connect(broken, dispatch_uid="test-broken")
    try:
        first, deadline = waiting()
        second, _ = waiting(expires_in=3601)
        done = remind_due(now=in_window(deadline))
    finally:
        review_reminder.disconnect(dispatch_uid="test-broken")
    assert sorted(done["reminded"]) == sorted([first["id"], second["id"]])
    assert len(sent["remind"]) == 2  # the other receivers still ran
    assert "could not e-mail the remind" in caplog.text and "chat is down" in caplog.text
    for task in (first, second):
        stored = DjangoTaskStore().get(task["id"])
        assert stored is not None and stored["status"]["state"] == "input-required"
        assert (lifecycle.read(stored).review or {}).get("reminded")  # not sent again


# -- off, other stores, the sweep -----------------------------------------------------------


def test_off_without_remind_before_does_no_work(settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": {"REMIND_BEFORE": None}}

    class Untouchable(InMemoryTaskStore):
        def waiting_ids(self, expired_by: datetime | None = None) -> list[str]:
            raise AssertionError("looked for waiting Tasks while reminders are off")

    assert remind_due(Untouchable()) == {}


def test_the_memory_store_reminds_too(review: Any, sent: Any, settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "STORE": "memory"}
    store = get_task_store()
    task, deadline = waiting(store)
    far, _ = waiting(store, expires_in=7200)  # outside the window: not even looked at
    assert remind_due(store, now=in_window(deadline))["reminded"] == [task["id"]]
    assert "remind" not in kinds(far["id"], store)


@pytest.mark.django_db
def test_each_sweep_reminds(review: Any, sent: Any) -> None:
    assert remind_due in EXTRA_SWEEPS  # registered by the app's ready()
    task, _ = waiting(expires_in=BEFORE / 2)
    assert sweep_once()["reminded"] == [task["id"]]
    assert len(mail.outbox) == 1
