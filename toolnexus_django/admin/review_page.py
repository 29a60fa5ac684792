"""The review page of a Task that waits on a person: what it asks, the
transcript up to the halt, the timeline, and one form per way of answering.

Answers go through :func:`toolnexus_django.review.answer_task` only; the run
resumes in the background, never in the admin request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.text import Truncator
from django.utils.translation import gettext

from ..lifecycle.requests import already_answered
from ..models import AwaitingHumanTask, TaskRecord, TaskState
from ..review import AnswerRefused, answer_task
from ..review.forms import (
    ApproveForm,
    AuthorizationForm,
    DeclineForm,
    JsonReplyForm,
    SchemaNotSupported,
    schema_form_class,
)
from ..stores import DjangoTaskStore
from .display import (
    halted_call,
    parse_time,
    pretty_json,
    private_of,
    safe_link_url,
    time_left,
    timeline,
    transcript_turns,
)
from .tasks import can_answer

if TYPE_CHECKING:
    from .queue import AwaitingHumanTaskAdmin

#: Which decision each answer form records.
FORM_DECISIONS = {
    "approve": "approve",
    "decline": "decline",
    "reply": "reply",
    "authorize": "authorize",
}
WAITING = (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED)


def respond(admin: AwaitingHumanTaskAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    task_id = unquote(object_id)
    if request.method == "POST":
        if not can_answer(request):
            raise PermissionDenied
        return _answer(admin, request, task_id)
    if request.method not in ("GET", "HEAD"):
        return HttpResponseBadRequest()
    obj = admin.get_object(request, task_id)
    if obj is None:
        return _gone(admin, request, task_id)
    if not admin.has_view_permission(request, obj):
        raise PermissionDenied
    pending = private_of(obj).pending or {}
    return _render(admin, request, obj, answer_forms(pending))


def answer_forms(
    pending: dict[str, Any], action: str | None = None, data: Any = None
) -> dict[str, forms.Form]:
    """The forms that answer ``pending``, keyed by action; the one named
    ``action`` is bound to ``data``."""

    def bound(name: str) -> Any:
        return data if name == action else None

    if pending.get("kind") == "authorization":
        return {"authorize": AuthorizationForm(bound("authorize"), prefix="authorize")}
    reply_class: type[forms.Form] = JsonReplyForm
    request_data = pending.get("data")
    schema = request_data.get("schema") if isinstance(request_data, dict) else None
    if schema is not None:
        try:
            reply_class = schema_form_class(schema)
        except SchemaNotSupported:
            reply_class = JsonReplyForm
    return {
        "approve": ApproveForm(bound("approve"), prefix="approve"),
        "decline": DeclineForm(bound("decline"), prefix="decline"),
        "reply": reply_class(bound("reply"), prefix="reply"),
    }


def _queue_url(admin: AwaitingHumanTaskAdmin) -> str:
    return reverse(f"{admin.admin_site.name}:toolnexus_django_awaitinghumantask_changelist")


def _record_url(admin: AwaitingHumanTaskAdmin, obj: TaskRecord) -> str:
    return reverse(
        f"{admin.admin_site.name}:toolnexus_django_taskrecord_change", args=[quote(obj.pk)]
    )


def _answer(admin: AwaitingHumanTaskAdmin, request: HttpRequest, task_id: str) -> HttpResponse:
    action = request.POST.get("_answer")
    request_id = request.POST.get("request_id")
    if action not in FORM_DECISIONS or not request_id:
        return HttpResponseBadRequest("The form does not say what it answers.")
    obj = TaskRecord.objects.filter(pk=task_id).select_related("owner").first()
    if obj is None:
        admin.message_user(request, gettext("Task not found."), messages.ERROR)
        return HttpResponseRedirect(_queue_url(admin))
    pending = private_of(obj).pending or {}
    if obj.state not in WAITING or pending.get("id") != request_id:
        return _refused(admin, request, obj, request_id, None)
    forms_by_action = answer_forms(pending, action, request.POST)
    form = forms_by_action.get(action)
    if form is None:  # e.g. "approve" posted to an authorization request
        return HttpResponseBadRequest("This request cannot be answered that way.")
    if not form.is_valid():
        proxy = AwaitingHumanTask.objects.filter(pk=task_id).select_related("owner").first()
        return _render(admin, request, proxy or obj, forms_by_action)
    try:
        answer_task(
            obj.pk,
            form.to_answer(request_id),  # type: ignore[attr-defined]
            decision=FORM_DECISIONS[action],
            role="reviewer",
            user=request.user,
            comment=form.comment,  # type: ignore[attr-defined]
            via="admin",
        )
    except AnswerRefused as exc:
        if exc.reason == "invalid":
            # The schema check is the server's word, whatever the form allowed.
            for violation in exc.violations:
                where = violation["path"] or gettext("the answer")
                form.add_error(None, f"{where}: {violation['message']}")
            proxy = AwaitingHumanTask.objects.filter(pk=task_id).select_related("owner").first()
            return _render(admin, request, proxy or obj, forms_by_action)
        fresh = TaskRecord.objects.filter(pk=task_id).first()
        return _refused(admin, request, fresh or obj, request_id, exc)
    admin.message_user(
        request,
        gettext("Answered “%(prompt)s” (%(decision)s); the task resumes in the background.")
        % {
            "prompt": Truncator(str(pending.get("prompt") or obj.pk)).chars(80),
            "decision": FORM_DECISIONS[action],
        },
        messages.SUCCESS,
    )
    return HttpResponseRedirect(_queue_url(admin))


def _refused(
    admin: AwaitingHumanTaskAdmin,
    request: HttpRequest,
    obj: TaskRecord,
    request_id: str,
    exc: AnswerRefused | None,
) -> HttpResponse:
    """Say why an answer was not taken, and show the Task as it is now."""
    if exc is not None and exc.reason == "not-found":
        admin.message_user(request, str(exc), messages.ERROR)
        return HttpResponseRedirect(_queue_url(admin))
    admin.message_user(request, refusal_message(obj, request_id, exc), messages.ERROR)
    return HttpResponseRedirect(_record_url(admin, obj))


def refusal_message(task: TaskRecord, request_id: str, exc: AnswerRefused | None) -> str:
    """What a reviewer is told when an answer is not taken. An answer to a
    Request someone already answered says so, even if the Task has moved on to
    a new Request since."""
    earlier = [
        e
        for e in DjangoTaskStore().events(task.pk)
        if e.get("kind") in ("answer", "expire")
        and (e.get("private") or {}).get("request") == request_id
    ]
    if earlier:
        return already_answered(earlier[-1], task.state)
    if exc is not None:
        return str(exc)
    if task.state in WAITING:
        return gettext("This task now waits on a different request; review it again.")
    return gettext("This task is %(state)s: it is not waiting for an answer.") % {
        "state": task.state
    }


def _gone(admin: AwaitingHumanTaskAdmin, request: HttpRequest, task_id: str) -> HttpResponse:
    """GET for a Task that no longer waits: show it read-only instead."""
    obj = TaskRecord.objects.filter(pk=task_id).first()
    if obj is None:
        admin.message_user(
            request,
            gettext("There is no task with id “%(id)s”.") % {"id": Truncator(task_id).chars(100)},
            messages.WARNING,
        )
        return HttpResponseRedirect(_queue_url(admin))
    admin.message_user(
        request,
        gettext("This task is %(state)s: it is not waiting for a person any more.")
        % {"state": obj.state},
        messages.INFO,
    )
    return HttpResponseRedirect(_record_url(admin, obj))


def _render(
    admin: AwaitingHumanTaskAdmin,
    request: HttpRequest,
    obj: TaskRecord,
    forms_by_action: dict[str, forms.Form],
) -> HttpResponse:
    private = private_of(obj)
    pending = private.pending or {}
    style = private.style or "openai"
    turns = transcript_turns(private.transcript, style)
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
    if schema is not None and "reply" in forms_by_action:
        try:
            schema_form_class(schema)
        except SchemaNotSupported as exc:
            schema_note = str(exc)
    expires = parse_time(pending.get("expiresAt"))
    answering = can_answer(request)
    context = {
        **admin.admin_site.each_context(request),
        "opts": admin.opts,
        "title": gettext("Review task"),
        "subtitle": str(obj.pk),
        "original": obj,
        "task_id": obj.pk,
        "input_text": private.input_text,
        "pending": pending,
        "request_data_json": data_shown,
        "schema_json": pretty_json(schema) if schema is not None else None,
        "schema_note": schema_note,
        "auth_url": safe_link_url(pending.get("url"))
        if pending.get("kind") == "authorization"
        else None,
        "expires_at": expires,
        "time_left": time_left(expires),
        "call": halted_call(private.transcript, style),
        "system_turns": [t for t in turns if t.role == "system"],
        "turns": [t for t in turns if t.role != "system"],
        "style": style,
        "owner": obj.owner.get_username() if obj.owner is not None else None,
        "events": timeline(obj),
        "can_answer": answering,
        "forms": forms_by_action if answering else {},
        "has_errors": any(f.is_bound and f.errors for f in forms_by_action.values()),
        "record_url": _record_url(admin, obj),
        "has_view_permission": True,
    }
    request.current_app = admin.admin_site.name
    return TemplateResponse(request, admin.review_template, context)
