"""Holds in the admin: hold and release a Task from its review page, and go
on to the next Task nobody else holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from django.contrib import messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext

from .. import lifecycle
from ..conf import toolnexus_settings
from ..models import AwaitingHumanTask
from ..review.holds import hold_task, release_task
from ..review.reviewers import reviewer_name
from ..stores.base import Task
from .filters import live_hold, with_holds
from .history import decision_message, log_decision
from .tasks import can_answer

if TYPE_CHECKING:
    from .queue import AwaitingHumanTaskAdmin


def _review_url(admin: AwaitingHumanTaskAdmin, task_id: str) -> str:
    return reverse(
        f"{admin.admin_site.name}:toolnexus_django_awaitinghumantask_review",
        args=[quote(task_id)],
    )


def _queue_url(admin: AwaitingHumanTaskAdmin) -> str:
    return reverse(f"{admin.admin_site.name}:toolnexus_django_awaitinghumantask_changelist")


def _move(
    admin: AwaitingHumanTaskAdmin,
    request: HttpRequest,
    object_id: str,
    make: Callable[[str], Task],
    decision: str,
    said: str,
) -> HttpResponse | str:
    """A hold move from the review page (POST, by a reviewer): the Task's
    id once made and logged; the response for a refusal."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not can_answer(request):
        raise PermissionDenied
    task_id = unquote(object_id)
    try:
        task = make(task_id)
    except lifecycle.AnswerRefused as refused:
        admin.message_user(request, str(refused), messages.WARNING)
        return HttpResponseRedirect(_review_url(admin, task_id))
    prompt = (lifecycle.read(task).pending or {}).get("prompt")
    log_decision(request.user, [task_id], decision_message(decision, prompt))
    admin.message_user(request, said, messages.SUCCESS)
    return task_id


def hold(admin: AwaitingHumanTaskAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """POST: hold the Task (``take_over=1`` to take it from another reviewer)."""
    take_over = request.POST.get("take_over") == "1"
    done = _move(
        admin, request, object_id,
        lambda task_id: hold_task(task_id, request.user, take_over=take_over),
        "take_over" if take_over else "hold",
        gettext("You are reviewing this task; others see that you hold it."),
    )  # fmt: skip
    return (
        done if isinstance(done, HttpResponse) else HttpResponseRedirect(_review_url(admin, done))
    )


def release(admin: AwaitingHumanTaskAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """POST: give the Task back to the queue."""
    done = _move(
        admin, request, object_id, lambda task_id: release_task(task_id, request.user),
        "release", gettext("Released: the task is back in the queue."),
    )  # fmt: skip
    if isinstance(done, HttpResponse):
        return done
    return HttpResponseRedirect(_queue_url(admin))


def next_task_id(request: HttpRequest, after: str | None = None) -> str | None:
    """The newest waiting Task (the queue's order) that nobody but this
    reviewer holds, other than ``after`` — and, unless
    ``REVIEW["ALLOW_SELF_APPROVAL"]``, not one the reviewer sent: one query."""
    rows = with_holds(AwaitingHumanTask.objects.order_by("-updated_at"))
    rows = rows.exclude(live_hold() & ~Q(_hold_by=reviewer_name(request.user)))
    if not toolnexus_settings.REVIEW["ALLOW_SELF_APPROVAL"]:
        rows = rows.exclude(owner_id=request.user.pk)
    if after:
        rows = rows.exclude(pk=after)
    found = rows.values_list("pk", flat=True).first()
    return None if found is None else str(found)


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
