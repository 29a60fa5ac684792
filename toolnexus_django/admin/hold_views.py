"""The admin's side of holds (the reviewer's moves are
:mod:`toolnexus_django.review.holds`): hold and release a Task from its
review page, and go on to the next Task nobody else holds."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.translation import gettext

from .. import lifecycle
from ..conf import toolnexus_settings
from ..models import AwaitingHumanTask
from ..review.holds import hold_task, release_task
from ..review.reviewers import reviewer_name
from ..stores.base import Task
from .filters import live_hold, with_holds
from .history import decision_message, log_decision
from .pages import QueuePage
from .tasks import can_answer


class HoldMove(QueuePage):
    """A hold move from the review page: a POST, by a reviewer; made,
    logged and said, or the refusal said, back on the review page."""

    http_method_names = ["post"]

    def post(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not can_answer(request):
            raise PermissionDenied
        task_id = unquote(object_id)
        try:
            task, decision, said = self.make(request, task_id)
        except lifecycle.AnswerRefused as refused:
            self.say(request, str(refused), messages.WARNING)
            return HttpResponseRedirect(self.review_url(task_id))
        prompt = (lifecycle.read(task).pending or {}).get("prompt")
        log_decision(request.user, [task_id], decision_message(decision, prompt))
        self.say(request, said, messages.SUCCESS)
        return HttpResponseRedirect(self.done_url(task_id))

    def make(self, request: HttpRequest, task_id: str) -> tuple[Task, str, str]:
        """The move: the Task as saved, the decision logged, what is said."""
        raise NotImplementedError

    def done_url(self, task_id: str) -> str:
        return self.review_url(task_id)


class HoldView(HoldMove):
    """POST: hold the Task (``take_over=1`` to take it from another reviewer)."""

    def make(self, request: HttpRequest, task_id: str) -> tuple[Task, str, str]:
        take_over = request.POST.get("take_over") == "1"
        task = hold_task(task_id, request.user, take_over=take_over)
        said = gettext("You are reviewing this task; others see that you hold it.")
        return task, "take_over" if take_over else "hold", said


class ReleaseView(HoldMove):
    """POST: give the Task back to the queue."""

    def make(self, request: HttpRequest, task_id: str) -> tuple[Task, str, str]:
        task = release_task(task_id, request.user)
        return task, "release", gettext("Released: the task is back in the queue.")

    def done_url(self, task_id: str) -> str:
        return self.queue_url()


class NextView(QueuePage):
    """The next Task nobody else holds, in the queue's order (``?after=``:
    other than that one)."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        found = next_task_id(request, request.GET.get("after"))
        if found is None:
            self.say(request, gettext("No other task is waiting for a reviewer."), messages.INFO)
            return HttpResponseRedirect(self.queue_url())
        return HttpResponseRedirect(self.review_url(found))

    post = get  # a form's button as well as a link, as before


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
