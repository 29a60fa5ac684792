"""Claims in the admin: claim and release a Task from its review page, see
who holds it in the queue, and go on to the next Task nobody else holds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext

from .. import lifecycle
from ..models import AwaitingHumanTask
from ..review.claims import claim_task, holder, release_task, reviewer_name
from ..stores.base import Task
from .display import server_side
from .history import decision_message, log_decision
from .tasks import can_answer

if TYPE_CHECKING:
    from .queue import AwaitingHumanTaskAdmin

#: How many queued Tasks "review next" looks through for one nobody holds.
NEXT_WINDOW = 200


def review_state(task: Task) -> dict[str, Any]:
    """Who holds the Task, and how many of the approvals it needs it has."""
    halt = lifecycle.read(task).halt or {}
    return {
        "holder": holder(task),
        "done": len(lifecycle.approvals_of(task)),
        "approvals": lifecycle.approvals_of(task),
        "needed": lifecycle.approvals_needed(halt.get("tool")),
    }


def _review_url(admin: AwaitingHumanTaskAdmin, task_id: str) -> str:
    return reverse(
        f"{admin.admin_site.name}:toolnexus_django_awaitinghumantask_review",
        args=[quote(task_id)],
    )


def _queue_url(admin: AwaitingHumanTaskAdmin) -> str:
    return reverse(f"{admin.admin_site.name}:toolnexus_django_awaitinghumantask_changelist")


def claim(admin: AwaitingHumanTaskAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """POST: claim the Task (``take_over=1`` to take it from another reviewer)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not can_answer(request):
        raise PermissionDenied
    task_id = unquote(object_id)
    take_over = request.POST.get("take_over") == "1"
    try:
        task = claim_task(task_id, request.user, take_over=take_over)
    except lifecycle.AnswerRefused as refused:
        admin.message_user(request, str(refused), messages.WARNING)
        return HttpResponseRedirect(_review_url(admin, task_id))
    prompt = (lifecycle.read(task).pending or {}).get("prompt")
    log_decision(
        request.user, [task_id], decision_message("take_over" if take_over else "claim", prompt)
    )
    admin.message_user(
        request,
        gettext("You are reviewing this task; others see that you hold it."),
        messages.SUCCESS,
    )
    return HttpResponseRedirect(_review_url(admin, task_id))


def release(admin: AwaitingHumanTaskAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """POST: give the Task back to the queue."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not can_answer(request):
        raise PermissionDenied
    task_id = unquote(object_id)
    try:
        task = release_task(task_id, request.user)
    except lifecycle.AnswerRefused as refused:
        admin.message_user(request, str(refused), messages.WARNING)
        return HttpResponseRedirect(_review_url(admin, task_id))
    prompt = (lifecycle.read(task).pending or {}).get("prompt")
    log_decision(request.user, [task_id], decision_message("release", prompt))
    admin.message_user(
        request, gettext("Released: the task is back in the queue."), messages.SUCCESS
    )
    return HttpResponseRedirect(_queue_url(admin))


def next_task_id(request: HttpRequest, after: str | None = None) -> str | None:
    """The newest waiting Task (the queue's order) that nobody but this
    reviewer holds, other than ``after``."""
    me = reviewer_name(request.user)
    rows = AwaitingHumanTask.objects.order_by("-updated_at").defer("task")
    if after:
        rows = rows.exclude(pk=after)
    for row in rows[:NEXT_WINDOW]:
        held = holder(server_side(row))
        if held is None or held["by"] == me:
            return str(row.pk)
    return None


def review_next(
    admin: AwaitingHumanTaskAdmin, request: HttpRequest, after: str | None
) -> HttpResponse:
    found = next_task_id(request, after)
    if found is None:
        admin.message_user(
            request, gettext("No other task is waiting for a reviewer."), messages.INFO
        )
        return HttpResponseRedirect(_queue_url(admin))
    return HttpResponseRedirect(_review_url(admin, found))
