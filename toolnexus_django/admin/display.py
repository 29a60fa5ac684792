"""What the admin pages show of a Task: its transcript, its halted call, its
timeline of events, times and links made safe."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.utils import timezone
from django.utils.timesince import timeuntil
from django.utils.translation import gettext

from .. import lifecycle
from ..agent import transcript
from ..agent.transcript import Call, Turn, pretty_json
from ..lifecycle.events import current
from ..models import TaskRecord
from ..stores import DjangoTaskStore
from ..stores.base import Task, parse_instant
from .actors import REQUESTER_KINDS, People, UserLink

__all__ = [
    "EventView",
    "halted_call",
    "owner_label",
    "pretty_json",
    "private_of",
    "safe_link_url",
    "server_side",
    "task_of",
    "time_left",
    "timeline",
    "transcript_turns",
]


def owner_label(user: Any) -> str:
    """How a Task's owner reads on every page: the user's name, or "anonymous
    caller" for a Task sent to an endpoint that lets anyone in."""
    if user is None:
        return gettext("anonymous caller")
    return str(user.get_username())


def task_of(obj: TaskRecord) -> Task:
    """The stored Task a row holds (public and private parts)."""
    return DjangoTaskStore.task_of(obj)


def server_side(obj: TaskRecord) -> Task:
    """A row's Task without its public part (which the queue defers): enough
    for the lifecycle's readers (holds, approvals, the halt)."""
    return DjangoTaskStore.task_of(obj, public=False)


def private_of(obj: TaskRecord) -> lifecycle.Private:
    """The typed private section of a row (its public part is not read)."""
    return lifecycle.read(DjangoTaskStore.task_of(obj, public=False))


def time_left(expires: datetime | None, now: datetime | None = None) -> str:
    if expires is None:
        return gettext("never")
    now = now or timezone.now()
    if expires <= now:
        return gettext("expired")
    return gettext("in %(time)s") % {"time": timeuntil(expires, now)}


def safe_link_url(url: Any) -> str | None:
    """``url`` if it is an absolute http(s) URL; anything else is never linked."""
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme.lower() in ("http", "https") and parts.netloc:
        return url.strip()
    return None


def transcript_turns(messages: Any, style: str) -> list[Turn]:
    """A suspended run's transcript as role-labelled turns (halt marked)."""
    return transcript.turns(messages, style)


def halted_call(messages: Any, style: str) -> Call | None:
    """The tool call the run stopped in, with its arguments as written."""
    try:
        return transcript.find_halt(messages, style).halted
    except transcript.TranscriptError:
        return None


@dataclass
class EventView:
    """One event of a Task's timeline, ready for the template."""

    seq: int
    at: datetime | None
    at_raw: str
    kind: str
    decision: str
    actor: str
    actor_kind: str
    via: str
    from_state: str
    to_state: str
    ok: Any
    reason: str
    data: str
    comment: str
    request: str
    request_kind: str
    error: str
    #: A reviewer's edit of the call: the arguments before and after (JSON).
    edited_from: str = ""
    edited_to: str = ""
    #: Four eyes: "1 of 2" on a first approval.
    approvals: str = ""
    #: The actor's admin page, for a viewer who may see users ("" else).
    actor_url: str = ""

    @property
    def edited(self) -> bool:
        return bool(self.edited_to)


def _view(stored: dict[str, Any], people: People) -> EventView:
    event = current(stored)  # a renamed kind under its name now
    private = event.get("private") or {}
    data = private.get("data")
    at = event.get("at")
    actor, actor_url = str(event.get("actor") or ""), ""
    if event.get("actor_kind") == "user":
        requester = event.get("kind") in REQUESTER_KINDS or private.get("role") == "requester"
        person = people.named(actor, requester=requester)
        actor, actor_url = person.name, person.url
    return EventView(
        seq=int(event.get("seq") or 0),
        at=at if isinstance(at, datetime) else parse_instant(at),
        at_raw=at.isoformat() if isinstance(at, datetime) else str(at or ""),
        kind=str(event.get("kind") or ""),
        decision=str(private.get("decision") or ""),
        actor=actor,
        actor_kind=str(event.get("actor_kind") or ""),
        via=str(event.get("via") or ""),
        from_state=str(event.get("from_state") or ""),
        to_state=str(event.get("to_state") or ""),
        ok=private.get("ok"),
        reason=str(private.get("reason") or ""),
        data="" if data in (None, {}) else pretty_json(data),
        comment=str(private.get("comment") or ""),
        request=str(private.get("request") or ""),
        request_kind=str(private.get("kind") or ""),
        error=_error(private),
        edited_from=_edit(private, "before"),
        edited_to=_edit(private, "after"),
        approvals=f"{private.get('approvals')} of {private.get('needed')}"
        if event.get("kind") == "review_approval"
        else "",
        actor_url=actor_url,
    )


def _error(private: dict[str, Any]) -> str:
    """A failure's words, with what only operators see: the exception and
    the reference its log line carries."""
    words = str(private.get("error") or "")
    if words and private.get("cause"):
        words += f" — {private['cause']}"
    if words and private.get("reference"):
        words += f" [reference {private['reference']}]"
    return words


def _edit(private: dict[str, Any], which: str) -> str:
    edit = private.get("arguments")
    return pretty_json(edit.get(which)) if isinstance(edit, dict) and which in edit else ""


def _legacy(entry: dict[str, Any]) -> dict[str, Any]:
    """An audit entry of an earlier version, as an event."""
    return {
        "at": entry.get("at"),
        "kind": "answer" if entry.get("decision") != "cancel" else "cancel",
        "actor": entry.get("actor"),
        "via": entry.get("via"),
        "from_state": entry.get("from"),
        "to_state": entry.get("to"),
        "private": entry,
    }


def timeline(obj: TaskRecord, link: UserLink | None = None) -> list[EventView]:
    """Every event of the Task, oldest first (an earlier version's audit
    trail, for a Task stored before events existed), each person by name —
    linked to their admin page with ``link`` (:func:`.actors.user_link`)."""
    rows = [
        dict(row)
        for row in obj.events.order_by("seq").values(
            "seq", "kind", "from_state", "to_state", "at", "actor", "actor_kind", "via", "private"
        )
    ] or [_legacy(e) for e in lifecycle.legacy_audit(task_of(obj))]
    names = {str(r.get("actor") or "") for r in rows if r.get("actor_kind") == "user"}
    people = People(obj.owner, names, link)
    return [_view(row, people) for row in rows]
