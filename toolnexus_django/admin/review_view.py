"""The review page of a Task that waits on a person: GET shows it
(:mod:`.review_context`), POST answers it — approve, edit then approve,
reply, decline, or record a sign-in — and goes back to the queue or on to the
next Task ("Answer and review next").

It and the queue's other pages (:mod:`.hold_views`) are class-based views
that hold the queue's ModelAdmin (:class:`QueuePage`): ``as_view(model_admin=self)``
in its ``get_urls()``, the way Django's ``AutocompleteJsonView`` holds its
admin site, so no page imports the ModelAdmin back.

Answers go through :func:`toolnexus_django.review.decide_task` only; the run
resumes in the background, never in the admin request. A Task another
reviewer holds is answered only once the reviewer confirms.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.translation import gettext
from django.views import View
from toolnexus import Answer

from .. import lifecycle
from ..lifecycle.requests import already_answered
from ..models import AwaitingHumanTask, TaskRecord, TaskState
from ..review import AnswerRefused, Verdict, decide_task
from ..review.answer_forms import answer_form, answer_forms
from ..review.reviewers import hold_of, is_reviewer, reviewer_name
from ..stores import DjangoTaskStore
from .actors import user_link
from .filters import next_task_id
from .history import decision_message, log_decision
from .review_context import page_context, was_reviewed

#: Which decision each answer form records.
FORM_DECISIONS = {
    "approve": "approve",
    "edit": "approve",
    "decline": "decline",
    "reply": "reply",
    "authorize": "authorize",
}
WAITING = (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED)


class QueuePage(View):
    #: The queue's ModelAdmin; ``as_view(model_admin=...)`` sets it.
    model_admin: ModelAdmin[Any] | None = None

    @property
    def queue(self) -> ModelAdmin[Any]:
        if self.model_admin is None:
            raise ImproperlyConfigured(f"{type(self).__name__}.as_view(model_admin=...)")
        return self.model_admin

    def url(self, name: str, *args: str) -> str:
        """The admin URL ``name`` (say ``"awaitinghumantask_review"``) in
        this admin site, of the object ids ``args``."""
        site = self.queue.admin_site.name
        return reverse(f"{site}:toolnexus_django_{name}", args=[quote(a) for a in args])

    def queue_url(self) -> str:
        return self.url("awaitinghumantask_changelist")

    def review_url(self, task_id: str) -> str:
        return self.url("awaitinghumantask_review", task_id)

    def record_url(self, task_id: str) -> str:
        """The stored Task's own (read-only) page."""
        return self.url("taskrecord_change", task_id)

    def say(self, request: HttpRequest, message: str, level: int) -> None:
        self.queue.message_user(request, message, level)

    def visible_record(self, request: HttpRequest, task_id: str) -> TaskRecord | None:
        """The stored Task, in any state, if this user may see it: a queue
        that scopes Tasks by object hides the others as if they were none."""
        obj = TaskRecord.objects.filter(pk=task_id).select_related("owner").first()
        return obj if obj is not None and self.queue.has_view_permission(request, obj) else None

    def no_task(self, request: HttpRequest, task_id: str) -> HttpResponse:
        """The one answer for an id that names no Task this user may see."""
        said = gettext("There is no task with id “%(id)s”.")
        self.say(request, said % {"id": Truncator(task_id).chars(100)}, messages.WARNING)
        return HttpResponseRedirect(self.queue_url())


class ReviewView(QueuePage):
    template_name = "admin/toolnexus_django/review.html"

    def get(self, request: HttpRequest, object_id: str) -> HttpResponse:
        task_id = unquote(object_id)
        obj = self.queue.get_object(request, task_id)  # None: not waiting, or not theirs to see
        if obj is None:
            return self.gone(request, task_id)
        private = lifecycle.read(DjangoTaskStore.task_of(obj))
        return self.render(request, obj, answer_forms(private))

    def post(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not is_reviewer(request.user):
            raise PermissionDenied
        return self.answer(request, unquote(object_id))

    def http_method_not_allowed(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        return HttpResponseBadRequest()

    def render(
        self,
        request: HttpRequest,
        obj: TaskRecord,
        forms_by_action: dict[str, forms.Form],
        *,
        confirm_hold: bool = False,
    ) -> HttpResponse:
        context = {
            **self.queue.admin_site.each_context(request),
            "opts": self.queue.opts,
            "record_url": self.record_url(obj.pk),
            **page_context(
                request,
                obj,
                forms_by_action,
                confirm_hold=confirm_hold,
                link=user_link(self.queue.admin_site, request),
            ),
        }
        request.current_app = self.queue.admin_site.name
        return TemplateResponse(request, self.template_name, context)

    def answer(self, request: HttpRequest, task_id: str) -> HttpResponse:
        action = request.POST.get("_answer")
        request_id = request.POST.get("request_id")
        if action not in FORM_DECISIONS or not request_id:
            return HttpResponseBadRequest("The form does not say what it answers.")
        obj = self.visible_record(request, task_id)
        if obj is None:
            return self.no_task(request, task_id)
        task = DjangoTaskStore.task_of(obj)
        private = lifecycle.read(task)
        if obj.state not in WAITING or (private.pending or {}).get("id") != request_id:
            return self.refused(request, obj, request_id, None)
        form = answer_form(private, action, request.POST)
        if form is None:  # e.g. "approve" posted to an authorization request
            return HttpResponseBadRequest("This request cannot be answered that way.")
        if not form.is_valid():
            return self.render(request, _proxy(task_id, obj), _with(private, action, form))
        held = hold_of(task)
        others = held is not None and held["by"] != reviewer_name(request.user)
        if held is not None and others and request.POST.get("_confirm_held") != "1":
            # Another reviewer is on it: say so, and answer only if asked again.
            said = gettext(
                "This task is being reviewed by %(name)s. Tick “Answer anyway” to answer it."
            )
            self.say(request, said % {"name": held["by"]}, messages.WARNING)
            shown = _with(private, action, form)
            return self.render(request, _proxy(task_id, obj), shown, confirm_hold=True)
        try:
            saved = decide_task(obj.pk, _verdict(request, action, form, request_id))
        except AnswerRefused as exc:
            return self.not_taken(request, obj, _with(private, action, form), action, exc)
        return self.answered(request, obj, action, form, saved)

    def answered(
        self, request: HttpRequest, obj: TaskRecord, action: str, form: Any, saved: Any
    ) -> HttpResponse:
        """Log and say what was decided; back to the queue, or on to the next Task."""
        prompt = (lifecycle.read(DjangoTaskStore.task_of(obj)).pending or {}).get(
            "prompt"
        ) or obj.pk
        decision = FORM_DECISIONS[action]
        still_waiting = lifecycle.phase_of(saved) == lifecycle.states.WAITING
        logged = "first_approval" if still_waiting else ("edit" if action == "edit" else decision)
        said = decision_message(logged, prompt, comment=form.comment)
        if action == "edit":
            said += " " + gettext("(with edited arguments)")
        log_decision(request.user, [obj.pk], said)
        shown = {"prompt": Truncator(str(prompt)).chars(80), "decision": decision}
        if still_waiting:
            said = gettext(
                "Your approval of “%(prompt)s” counts; another reviewer must approve it too."
            )
        else:
            said = gettext(
                "Answered “%(prompt)s” (%(decision)s); the task resumes in the background."
            )
        # The link leads to the Task's page, where its answer appears once the run ends.
        linked = format_html(
            '{} <a href="{}" class="tnx-task-link">{}</a>',
            said % shown,
            self.record_url(obj.pk),
            gettext("Follow the task to its answer"),
        )
        self.say(request, linked, messages.SUCCESS)
        if request.POST.get("_next") == "1":
            found = next_task_id(request, after=obj.pk)
            if found is not None:
                return HttpResponseRedirect(self.review_url(found))
            self.say(request, gettext("No other task is waiting for a reviewer."), messages.INFO)
        return HttpResponseRedirect(self.queue_url())

    def not_taken(
        self,
        request: HttpRequest,
        obj: TaskRecord,
        forms_by_action: dict[str, forms.Form],
        action: str,
        exc: AnswerRefused,
    ) -> HttpResponse:
        """The answer was refused: the form's errors, or why, and where to look."""
        form = forms_by_action[action]
        request_id = str(request.POST.get("request_id"))
        if exc.reason == "invalid":
            # The schema check is the server's word, whatever the form allowed.
            for violation in exc.violations or [{"path": "", "message": str(exc)}]:
                where = violation["path"] or gettext("the answer")
                form.add_error(None, f"{where}: {violation['message']}")
            return self.render(request, _proxy(obj.pk, obj), forms_by_action)
        if exc.reason in ("already-approved", "own-request"):
            # Nothing moved: back to the page, which says why.
            self.say(request, str(exc), messages.WARNING)
            return HttpResponseRedirect(self.review_url(obj.pk))
        fresh = TaskRecord.objects.filter(pk=obj.pk).first()
        return self.refused(request, fresh or obj, request_id, exc)

    def refused(
        self, request: HttpRequest, obj: TaskRecord, request_id: str, exc: AnswerRefused | None
    ) -> HttpResponse:
        """Say why an answer was not taken, and show the Task as it is now."""
        if exc is not None and exc.reason == "not-found":
            self.say(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(self.queue_url())
        self.say(request, refusal_message(obj, request_id, exc), messages.ERROR)
        return HttpResponseRedirect(self.record_url(obj.pk))

    def gone(self, request: HttpRequest, task_id: str) -> HttpResponse:
        """GET for a Task that no longer waits: its review read-only, if it had
        one; the stored Task otherwise."""
        obj = self.visible_record(request, task_id)
        if obj is None:
            return self.no_task(request, task_id)
        if was_reviewed(obj) and self.queue.has_view_permission(request):
            return self.render(request, obj, {})
        said = gettext("This task is %(state)s: it is not waiting for a person any more.")
        self.say(request, said % {"state": obj.state}, messages.INFO)
        return HttpResponseRedirect(self.record_url(obj.pk))


def _with(private: lifecycle.Private, action: str, form: forms.Form) -> dict[str, forms.Form]:
    """Every form of the page, ``form`` (the one posted) among them: built
    only when the page is shown again."""
    return {**answer_forms(private), action: form}


def _proxy(task_id: str, fallback: TaskRecord) -> TaskRecord:
    return AwaitingHumanTask.objects.filter(pk=task_id).select_related("owner").first() or fallback


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
