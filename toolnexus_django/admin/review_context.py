"""What the review page shows: what the Task asks, the transcript up to the
halt, who holds it and who approved, the timeline, and one form per way of
answering — or, once the Request is answered, all of it read-only with the
decision."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest
from django.utils.translation import gettext

from .. import lifecycle
from ..models import TaskRecord
from ..review.forms import SchemaNotSupported
from ..review.reviewers import is_own_request, is_reviewer, review_state, reviewer_name
from ..review.schema_forms import schema_form_class
from ..stores.base import parse_instant
from .actors import UserLink
from .display import (
    halted_call,
    owner_label,
    pretty_json,
    safe_link_url,
    task_of,
    time_left,
    timeline,
    transcript_turns,
)

#: The decisions an answered Task's page names.
DECIDED = ("answer", "expire", "review_approval")


def _request_facts(pending: dict[str, Any], has_reply: bool) -> dict[str, Any]:
    request_data = pending.get("data")
    data_shown: Any = None
    schema: Any = None
    if isinstance(request_data, dict):
        schema = request_data.get("schema")
        rest = {k: v for k, v in request_data.items() if k != "schema"}
        data_shown = pretty_json(rest) if rest else None
    elif request_data is not None:
        data_shown = pretty_json(request_data)
    schema_note = None
    if schema is not None and has_reply:
        try:
            schema_form_class(schema)
        except SchemaNotSupported as exc:
            schema_note = str(exc)
    expires = parse_instant(pending.get("expiresAt"))
    return {
        "request_data_json": data_shown,
        "schema_json": pretty_json(schema) if schema is not None else None,
        "schema_note": schema_note,
        "auth_url": safe_link_url(pending.get("url"))
        if pending.get("kind") == "authorization"
        else None,
        "expires_at": expires,
        "time_left": time_left(expires),
    }


def page_context(
    request: HttpRequest,
    obj: TaskRecord,
    forms_by_action: dict[str, forms.Form],
    *,
    confirm_hold: bool = False,
    link: UserLink | None = None,
) -> dict[str, Any]:
    """What the page of a waiting Task shows (``forms_by_action``: its answer
    forms), or of an answered one read-only (no forms: what was decided on,
    and how); ``link``: where the people it names have their admin pages,
    for a viewer who may follow them (:func:`.actors.user_link`)."""
    task = task_of(obj)
    private = lifecycle.read(task)
    waiting = private.phase == lifecycle.states.WAITING
    shown = private if waiting else _as_reviewed(private)
    pending = shown.pending or {}
    style = shown.style or "openai"
    turns = transcript_turns(shown.transcript, style)
    events = timeline(obj, link)
    # The requester of a reviewer's Request is no reviewer of it (segregation of duties).
    own = waiting and is_own_request(request.user, task)
    answering = waiting and is_reviewer(request.user) and not own
    state = review_state(task) if waiting else {}
    me = reviewer_name(request.user)
    holder = state.get("holder")
    return {
        "title": gettext("Review task") if waiting else gettext("Reviewed task"),
        "subtitle": str(obj.pk),
        "original": obj,
        "task_id": obj.pk,
        "waiting": waiting,
        "input_text": private.input_text,
        "pending": pending,
        **_request_facts(pending, "reply" in forms_by_action),
        "call": halted_call(shown.transcript, style),
        "system_turns": [t for t in turns if t.role == "system"],
        "turns": [t for t in turns if t.role != "system"],
        "style": style,
        "owner": owner_label(obj.owner),
        "events": events,
        "decisions": [e for e in events if e.kind in DECIDED],
        "can_answer": answering,
        "own_request": own,
        "forms": forms_by_action if answering else {},
        "offers_reply": offers_reply(pending, forms_by_action),
        "has_errors": any(f.is_bound and f.errors for f in forms_by_action.values()),
        "review": state,
        "held_by_me": bool(holder and holder["by"] == me),
        "held_by_other": bool(holder and holder["by"] != me),
        "confirm_hold": confirm_hold,
        "i_approved": any(a.get("by") == me for a in state.get("approvals") or ()),
        "has_view_permission": True,
    }


def offers_reply(pending: dict[str, Any], forms_by_action: dict[str, forms.Form]) -> bool:
    """Whether the page offers "Reply with data": not for a plain approval
    (no data schema), which a yes or no answers — unless a reply to it was
    posted, whose errors the page shows."""
    reply = forms_by_action.get("reply")
    if reply is None:
        return False
    data = pending.get("data")
    schema = data.get("schema") if isinstance(data, dict) else None
    return schema is not None or pending.get("kind") != "approval" or reply.is_bound


def _as_reviewed(private: lifecycle.Private) -> lifecycle.Private:
    """An answered Task's page shows what its reviewer saw (kept at answer)."""
    reviewed = private.reviewed or {}
    return lifecycle.Private(
        pending=reviewed.get("pending") if isinstance(reviewed.get("pending"), dict) else None,
        halt=reviewed.get("halt") if isinstance(reviewed.get("halt"), dict) else None,
        transcript=reviewed.get("transcript")
        if isinstance(reviewed.get("transcript"), list)
        else None,
        style=reviewed.get("style") if isinstance(reviewed.get("style"), str) else None,
    )


def was_reviewed(obj: TaskRecord) -> bool:
    """Whether a Task that no longer waits has a review to show."""
    return lifecycle.read(task_of(obj)).reviewed is not None
