"""The review page of a Task that waits on a person: GET shows it
(:mod:`.review_context`), POST answers it — approve, edit then approve,
reply, decline, or record a sign-in — and goes back to the queue or on to the
next Task ("Answer and review next").

Answers go through :func:`toolnexus_django.review.decide_task` only; the run
resumes in the background, never in the admin request. A Task another
reviewer holds is answered only once the reviewer confirms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils.text import Truncator
from django.utils.translation import gettext
from toolnexus import Answer

from .. import lifecycle
from ..lifecycle.requests import already_answered
from ..models import AwaitingHumanTask, TaskRecord, TaskState
from ..review import AnswerRefused, Verdict, decide_task
from ..review.holds import hold_of
from ..review.reviewers import reviewer_name
from ..stores import DjangoTaskStore
from .claims import next_task_id
from .display import task_of
from .history import decision_message, log_decision
from .review_context import answer_forms, record_url, render, was_reviewed
from .tasks import can_answer

if TYPE_CHECKING:
    from .queue import AwaitingHumanTaskAdmin

#: Which decision each answer form records.
FORM_DECISIONS = {
    "approve": "approve",
    "edit": "approve",
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
    return render(admin, request, obj, answer_forms(lifecycle.read(task_of(obj))))


def _queue_url(admin: AwaitingHumanTaskAdmin) -> str:
    return reverse(f"{admin.admin_site.name}:toolnexus_django_awaitinghumantask_changelist")


def _review_url(admin: AwaitingHumanTaskAdmin, task_id: str) -> str:
    return reverse(
        f"{admin.admin_site.name}:toolnexus_django_awaitinghumantask_review",
        args=[quote(task_id)],
    )


def _proxy(task_id: str, fallback: TaskRecord) -> TaskRecord:
    return AwaitingHumanTask.objects.filter(pk=task_id).select_related("owner").first() or fallback


def _answer(admin: AwaitingHumanTaskAdmin, request: HttpRequest, task_id: str) -> HttpResponse:
    action = request.POST.get("_answer")
    request_id = request.POST.get("request_id")
    if action not in FORM_DECISIONS or not request_id:
        return HttpResponseBadRequest("The form does not say what it answers.")
    obj = TaskRecord.objects.filter(pk=task_id).select_related("owner").first()
    if obj is None:
        admin.message_user(request, gettext("Task not found."), messages.ERROR)
        return HttpResponseRedirect(_queue_url(admin))
    task = task_of(obj)
    private = lifecycle.read(task)
    pending = private.pending or {}
    if obj.state not in WAITING or pending.get("id") != request_id:
        return _refused(admin, request, obj, request_id, None)
    forms_by_action = answer_forms(private, action, request.POST)
    form = forms_by_action.get(action)
    if form is None:  # e.g. "approve" posted to an authorization request
        return HttpResponseBadRequest("This request cannot be answered that way.")
    if not form.is_valid():
        return render(admin, request, _proxy(task_id, obj), forms_by_action)
    held = hold_of(task)
    if held is not None and held["by"] != reviewer_name(request.user):
        if request.POST.get("_confirm_held") != "1":
            # Another reviewer is on it: say so, and answer only if asked again.
            admin.message_user(
                request,
                gettext(
                    "This task is being reviewed by %(name)s. Tick “Answer anyway” to answer it."
                )
                % {"name": held["by"]},
                messages.WARNING,
            )
            return render(admin, request, _proxy(task_id, obj), forms_by_action, confirm_hold=True)
    decision = FORM_DECISIONS[action]
    try:
        saved = decide_task(obj.pk, _verdict(request, action, form, request_id))
    except AnswerRefused as exc:
        if exc.reason == "invalid":
            # The schema check is the server's word, whatever the form allowed.
            for violation in exc.violations or [{"path": "", "message": str(exc)}]:
                where = violation["path"] or gettext("the answer")
                form.add_error(None, f"{where}: {violation['message']}")
            return render(admin, request, _proxy(task_id, obj), forms_by_action)
        if exc.reason in ("already-approved", "own-request"):
            # Nothing moved: back to the page, which says why.
            admin.message_user(request, str(exc), messages.WARNING)
            return HttpResponseRedirect(_review_url(admin, task_id))
        fresh = TaskRecord.objects.filter(pk=task_id).first()
        return _refused(admin, request, fresh or obj, request_id, exc)
    prompt = pending.get("prompt") or obj.pk
    still_waiting = lifecycle.phase_of(saved) == lifecycle.states.WAITING
    logged = "first_approval" if still_waiting else ("edit" if action == "edit" else decision)
    said = decision_message(logged, prompt, comment=form.comment)  # type: ignore[attr-defined]
    if action == "edit":
        said += " " + gettext("(with edited arguments)")
    log_decision(request.user, [obj.pk], said)
    if still_waiting:
        admin.message_user(
            request,
            gettext("Your approval of “%(prompt)s” counts; another reviewer must approve it too.")
            % {"prompt": Truncator(str(prompt)).chars(80)},
            messages.SUCCESS,
        )
    else:
        admin.message_user(
            request,
            gettext("Answered “%(prompt)s” (%(decision)s); the task resumes in the background.")
            % {"prompt": Truncator(str(prompt)).chars(80), "decision": decision},
            messages.SUCCESS,
        )
    if request.POST.get("_next") == "1":
        found = next_task_id(request, after=obj.pk)
        if found is not None:
            return HttpResponseRedirect(_review_url(admin, found))
        admin.message_user(
            request, gettext("No other task is waiting for a reviewer."), messages.INFO
        )
    return HttpResponseRedirect(_queue_url(admin))


def _verdict(request: HttpRequest, action: str, form: Any, request_id: str) -> Verdict:
    """What the reviewer's form (of ``action``) says, as a Verdict."""
    if action == "edit":  # the approval of the call with the form's arguments
        given = Answer(id=request_id, ok=True, data=None, reason=None)
        arguments = form.answer_data()
    else:
        given, arguments = form.to_answer(request_id), None
    return Verdict(
        given, FORM_DECISIONS[action], role="reviewer", user=request.user,
        comment=form.comment, via="admin", arguments=arguments,
    )  # fmt: skip


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
    return HttpResponseRedirect(record_url(admin, obj))


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
    """GET for a Task that no longer waits: its review read-only, if it had
    one; the stored Task otherwise."""
    obj = TaskRecord.objects.filter(pk=task_id).select_related("owner").first()
    if obj is None:
        admin.message_user(
            request,
            gettext("There is no task with id “%(id)s”.") % {"id": Truncator(task_id).chars(100)},
            messages.WARNING,
        )
        return HttpResponseRedirect(_queue_url(admin))
    if was_reviewed(obj) and admin.has_view_permission(request):
        return render(admin, request, obj, {})
    admin.message_user(
        request,
        gettext("This task is %(state)s: it is not waiting for a person any more.")
        % {"state": obj.state},
        messages.INFO,
    )
    return HttpResponseRedirect(record_url(admin, obj))
