"""The admin's side of holds (the reviewer's moves are
:mod:`toolnexus_django.review.holds`): hold and release a Task from its
review page, and go on to the next Task nobody else holds."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.translation import gettext

from .. import lifecycle
from ..review.holds import hold_task, release_task
from ..review.reviewers import is_reviewer
from ..stores.base import Task
from .filters import next_task_id
from .history import decision_message, log_decision
from .review_view import QueuePage


class HoldMove(QueuePage):
    """A hold move from the review page: a POST, by a reviewer; made,
    logged and said, or the refusal said, back on the review page."""

    http_method_names = ["post"]

    def post(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not is_reviewer(request.user):
            raise PermissionDenied
        task_id = unquote(object_id)
        if self.visible_record(request, task_id) is None:
            return self.no_task(request, task_id)
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
