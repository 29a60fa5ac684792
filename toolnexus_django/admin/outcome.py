"""What a Task came to, in words: the summary at the top of its admin page —
its state, what the requester asked, the answer (or the failure, or what it
waits on), and each decision a person made on it, with who and when. Read
from the stored Task and its events; the templates escape every word."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import lifecycle
from ..lifecycle.messages import message_text
from ..models import TaskRecord, TaskState
from .decisions import DECISION_LABELS
from .display import EventView, task_of, timeline

#: Event kinds a person's (or expiry's) decision records.
DECISION_KINDS = ("answer", "expire", "review_approval", "cancel")
#: Event kinds that end a run in failure (their private detail says why).
FAILURE_KINDS = ("fail", "give_up")

#: What each state means to someone reading the page.
STATE_MEANINGS: dict[str, Any] = {
    TaskState.SUBMITTED: _("Received; no worker has started it yet."),
    TaskState.WORKING: _("A worker is running it now."),
    TaskState.INPUT_REQUIRED: _("Stopped: it waits for a person's answer."),
    TaskState.AUTH_REQUIRED: _("Stopped: it waits for a person to sign in somewhere."),
    TaskState.COMPLETED: _("Finished: the agent's answer is below."),
    TaskState.FAILED: _("Ended without an answer: why is below."),
    TaskState.CANCELED: _("Canceled before it finished."),
    TaskState.REJECTED: _("The agent declined to do it."),
}


@dataclass
class Decision:
    """One decision on the Task, as the summary names it."""

    label: str
    actor: str
    actor_kind: str
    at: Any
    at_raw: str
    comment: str = ""
    approvals: str = ""


@dataclass
class Outcome:
    """The summary of a Task, ready for the template."""

    state: str
    state_label: str
    meaning: str
    request_text: str
    #: "answer" (completed), "failure" (failed, canceled, rejected),
    #: "waiting" (input- / auth-required) or "" (not finished).
    result_kind: str
    result_text: str
    #: What only operators see of a failure: the error, its cause, the log reference.
    failure_detail: str = ""
    #: The prompt of the Request a waiting Task stopped on.
    waiting_on: str = ""
    decisions: list[Decision] = field(default_factory=list)


def _texts(items: Any) -> str:
    """The text parts of artifacts or messages, joined."""
    found = [message_text(i) for i in items or () if isinstance(i, dict)]
    return "\n\n".join(t for t in found if t)


def _said_by(task: dict[str, Any], role: str) -> list[dict[str, Any]]:
    """The messages of the Task's history from ``role``, oldest first."""
    return [m for m in task.get("history") or () if isinstance(m, dict) and m.get("role") == role]


def _request_text(task: dict[str, Any], private: lifecycle.Private) -> str:
    if private.input_text:
        return private.input_text
    return _texts(_said_by(task, "user")[:1])


def _decision(event: EventView) -> Decision:
    said = event.decision or event.kind
    label = str(DECISION_LABELS.get(said, said))
    if event.kind == "review_approval":
        label = gettext("first approval")
    return Decision(
        label=label,
        actor=event.actor or gettext("the system"),
        actor_kind=event.actor_kind,
        at=event.at,
        at_raw=event.at_raw,
        comment=event.comment,
        approvals=event.approvals,
    )


def task_outcome(obj: TaskRecord) -> Outcome:
    """The summary of ``obj`` in any state (the stored Task, then its events)."""
    task = task_of(obj)
    private = lifecycle.read(task)
    found = task.get("status")
    status: dict[str, Any] = found if isinstance(found, dict) else {}
    state = str(status.get("state") or obj.state)
    status_text = _texts([status.get("message")])
    events = timeline(obj)
    result_kind, result_text, detail, waiting_on = "", "", "", ""
    if state == TaskState.COMPLETED:
        result_kind = "answer"
        # The artifact is the answer; an agent's last message stands in for a
        # Task another server wrote without one.
        result_text = _texts(task.get("artifacts")) or _texts(_said_by(task, "agent")[-1:])
    elif state in (TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED):
        result_kind = "failure"
        result_text = status_text or private.error or ""
        failures = [e for e in events if e.kind in FAILURE_KINDS and e.error]
        detail = failures[-1].error if failures else ""
        if detail == result_text:
            detail = ""
    elif state in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
        result_kind = "waiting"
        waiting_on = str((private.pending or {}).get("prompt") or "")
        result_text = status_text
    return Outcome(
        state=state,
        state_label=str(dict(TaskState.choices).get(state, state)),
        meaning=str(STATE_MEANINGS.get(state, "")),
        request_text=_request_text(task, private),
        result_kind=result_kind,
        result_text=result_text,
        failure_detail=detail,
        waiting_on=waiting_on,
        decisions=[_decision(e) for e in events if e.kind in DECISION_KINDS],
    )
