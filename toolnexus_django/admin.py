"""Tasks in the admin: a read-only view of every Task, and the human-review
queue ("Tasks awaiting a human") where a reviewer answers a suspended run.

Answers go through :func:`toolnexus_django.review.answer_task` only; the run
resumes in the background, never in the admin request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from django.utils.timesince import timesince, timeuntil
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .forms import (
    ApproveForm,
    AuthorizationForm,
    DeclineForm,
    JsonReplyForm,
    SchemaNotSupported,
    schema_form_class,
)
from .models import AwaitingHumanTask, TaskRecord, TaskState
from .review import ANSWER_PERMISSION, DECISIONS, AnswerRefused, answer_task

#: Request kinds the queue's filter names; any other kind is "other".
KNOWN_KINDS = ("approval", "input", "authorization")
#: Which decision each answer form records.
FORM_DECISIONS = {
    "approve": "approve",
    "decline": "decline",
    "reply": "reply",
    "authorize": "authorize",
}


def can_answer(request: HttpRequest) -> bool:
    return bool(request.user.is_active and request.user.has_perm(ANSWER_PERMISSION))


def pretty_json(value: Any) -> str:
    """Indented JSON for a <pre> (the template escapes it)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _private(obj: TaskRecord) -> dict[str, Any]:
    return obj.private if isinstance(obj.private, dict) else {}


def _pending(obj: TaskRecord) -> dict[str, Any]:
    pending = _private(obj).get("pending")
    return pending if isinstance(pending, dict) else {}


def _audit(obj: TaskRecord) -> list[dict[str, Any]]:
    return [e for e in _private(obj).get("audit") or () if isinstance(e, dict)]


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)


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


# -- transcripts ---------------------------------------------------------------


@dataclass
class ToolCallView:
    id: str
    name: str
    args: Any  # parsed arguments (a dict), or the raw string when not JSON

    @property
    def args_json(self) -> str:
        return self.args if isinstance(self.args, str) else pretty_json(self.args)

    @property
    def args_inline(self) -> str:
        if isinstance(self.args, str):
            return self.args
        return json.dumps(self.args, ensure_ascii=False, default=str)


@dataclass
class ToolResultView:
    call_id: str
    name: str
    content: str
    is_error: bool = False
    halted: bool = False


@dataclass
class TurnView:
    """One message of a transcript, whatever its wire shape."""

    role: str  # system | user | assistant | tool
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCallView] = field(default_factory=list)
    results: list[ToolResultView] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # unknown blocks, as JSON


def _parse_args(raw: Any) -> Any:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw or "{}")
        except ValueError:
            return raw
        return parsed
    return raw if raw is not None else {}


def _content_text(content: Any) -> tuple[list[str], list[str]]:
    """(texts, other blocks as JSON) of a message content: a string or a list
    of parts/blocks."""
    if content is None:
        return [], []
    if isinstance(content, str):
        return ([content] if content else []), []
    texts: list[str] = []
    other: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            elif isinstance(part, str):
                texts.append(part)
            else:
                other.append(pretty_json(part))
        return texts, other
    return [], [pretty_json(content)]


def _openai_turns(messages: list[Any]) -> list[TurnView]:
    names: dict[str, str] = {}
    turns: list[TurnView] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") or "?")
        if role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            texts, other = _content_text(message.get("content"))
            result = ToolResultView(
                call_id, names.get(call_id, str(message.get("name") or "")), "\n".join(texts)
            )
            turns.append(TurnView("tool", results=[result], other=other))
            continue
        texts, other = _content_text(message.get("content"))
        turn = TurnView(role, texts=texts, other=other)
        for call in message.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            function = call.get("function") or {}
            view = ToolCallView(
                str(call.get("id") or ""),
                str(function.get("name") or "?"),
                _parse_args(function.get("arguments")),
            )
            names[view.id] = view.name
            turn.calls.append(view)
        turns.append(turn)
    return turns


def _anthropic_turns(messages: list[Any]) -> list[TurnView]:
    names: dict[str, str] = {}
    turns: list[TurnView] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") or "?")
        content = message.get("content")
        if not isinstance(content, list):
            texts, other = _content_text(content)
            turns.append(TurnView(role, texts=texts, other=other))
            continue
        turn = TurnView(role)
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                turn.texts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                view = ToolCallView(
                    str(block.get("id") or ""),
                    str(block.get("name") or "?"),
                    _parse_args(block.get("input")),
                )
                names[view.id] = view.name
                turn.calls.append(view)
            elif kind == "tool_result":
                call_id = str(block.get("tool_use_id") or "")
                texts, other = _content_text(block.get("content"))
                turn.results.append(
                    ToolResultView(
                        call_id,
                        names.get(call_id, ""),
                        "\n".join(texts + other),
                        is_error=bool(block.get("is_error")),
                    )
                )
            else:
                turn.other.append(pretty_json(block))
        if turn.results and not (turn.texts or turn.calls or turn.other):
            turn.role = "tool"  # a user message that only carries tool results
        turns.append(turn)
    return turns


def transcript_turns(messages: Any, style: str) -> list[TurnView]:
    """A suspended run's transcript, ``openai`` or ``anthropic`` shaped, as
    role-labelled turns; the halted call's result is marked."""
    if not isinstance(messages, list):
        return []
    turns = _anthropic_turns(messages) if style == "anthropic" else _openai_turns(messages)
    for turn in reversed(turns):
        if turn.results:
            turn.results[-1].halted = True
            break
    return turns


def halted_call(private: dict[str, Any]) -> ToolCallView | None:
    """The tool call the run stopped in: the call whose id matches the last
    tool result, looked up in the assistant turn before it."""
    turns = transcript_turns(private.get("transcript"), str(private.get("style") or "openai"))
    last_result: ToolResultView | None = None
    for index in range(len(turns) - 1, -1, -1):
        turn = turns[index]
        if last_result is None:
            if turn.results:
                last_result = turn.results[-1]
            continue
        for call in turn.calls:
            if call.id == last_result.call_id:
                return call
        if turn.calls:
            return None  # the last assistant turn with calls does not have it
    return None


# -- the read-only Task admin --------------------------------------------------


class TaskAdminMixin:
    """What both Task admins show: the audit trail, read-only."""

    @admin.display(description=_("decisions"))
    def decisions(self, obj: TaskRecord) -> SafeString:
        return render_to_string(
            "admin/toolnexus_django/includes/decisions.html", {"events": audit_events(obj)}
        )


@dataclass
class AuditEventView:
    at: datetime | None
    at_raw: str
    actor: str
    via: str
    decision: str
    ok: Any
    data: str
    reason: str
    comment: str
    request: str
    kind: str
    from_state: str
    to_state: str


def audit_events(obj: TaskRecord) -> list[AuditEventView]:
    """The Task's audit trail, newest first."""
    out = []
    for event in _audit(obj):
        data = event.get("data")
        out.append(
            AuditEventView(
                at=_parse_time(event.get("at")),
                at_raw=str(event.get("at") or ""),
                actor=str(event.get("actor") or ""),
                via=str(event.get("via") or ""),
                decision=str(event.get("decision") or ""),
                ok=event.get("ok"),
                data="" if data in (None, {}) else pretty_json(data),
                reason=str(event.get("reason") or ""),
                comment=str(event.get("comment") or ""),
                request=str(event.get("request") or ""),
                kind=str(event.get("kind") or ""),
                from_state=str(event.get("from") or ""),
                to_state=str(event.get("to") or ""),
            )
        )
    out.reverse()
    return out


@admin.register(TaskRecord)
class TaskRecordAdmin(TaskAdminMixin, admin.ModelAdmin):
    list_display = ("id", "state", "context_id", "owner", "created_at", "updated_at")
    list_filter = ("state", "created_at", "updated_at")
    search_fields = ("id", "context_id")
    date_hierarchy = "created_at"
    list_select_related = ("owner",)
    show_full_result_count = False  # COUNT(*) over a million rows on every page is waste
    readonly_fields = (
        "id",
        "state",
        "review_link",
        "context_id",
        "owner",
        "created_at",
        "updated_at",
        "decisions",
        "task_json",
        "private_json",
    )
    fields = readonly_fields

    @admin.display(description=_("review"))
    def review_link(self, obj: TaskRecord) -> str:
        if obj.state not in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
            return "-"
        url = reverse(
            f"{self.admin_site.name}:toolnexus_django_awaitinghumantask_change",
            args=[quote(obj.pk)],
        )
        return format_html('<a href="{}">{}</a>', url, gettext("Answer it in the review queue"))

    @admin.display(description=_("task"))
    def task_json(self, obj: TaskRecord) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.task, indent=2, ensure_ascii=False))

    @admin.display(description=_("server-side data"))
    def private_json(self, obj: TaskRecord) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.private, indent=2, ensure_ascii=False))

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Reviewers land here when an answer is refused: let them read the Task.
        return super().has_view_permission(request, obj) or can_answer(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # One GROUP BY over the (state, updated_at) index: Tasks per state.
        counts = dict(TaskRecord.objects.order_by().values_list("state").annotate(n=Count("pk")))
        labels = dict(TaskState.choices)
        state_counts = [
            {"state": state, "label": labels.get(state, state), "count": counts[state]}
            for state in TaskState.values
            if counts.get(state)
        ]
        extra = {"state_counts": state_counts, **(extra_context or {})}
        return super().changelist_view(request, extra)


# -- the review queue ----------------------------------------------------------


class WaitingStateFilter(admin.SimpleListFilter):
    """Only the two states the queue holds (the field's choices list all eight)."""

    title = _("state")
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            (TaskState.INPUT_REQUIRED, TaskState.INPUT_REQUIRED.label),
            (TaskState.AUTH_REQUIRED, TaskState.AUTH_REQUIRED.label),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
            return queryset.filter(state=self.value())
        return queryset


class KindFilter(admin.SimpleListFilter):
    title = _("request kind")
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [(kind, kind) for kind in KNOWN_KINDS] + [("other", _("other"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value in KNOWN_KINDS:
            return queryset.filter(private__pending__kind=value)
        if value == "other":
            return queryset.exclude(private__pending__kind__in=KNOWN_KINDS)
        return queryset


class ExpiryFilter(admin.SimpleListFilter):
    title = _("expiry")
    parameter_name = "expiry"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            ("hour", _("within an hour")),
            ("day", _("within a day")),
            ("expired", _("expired")),
            ("never", _("no deadline")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        value = self.value()
        if value == "hour":
            return queryset.filter(expires_at__gt=now, expires_at__lte=now + timedelta(hours=1))
        if value == "day":
            return queryset.filter(expires_at__gt=now, expires_at__lte=now + timedelta(days=1))
        if value == "expired":
            return queryset.filter(expires_at__lte=now)
        if value == "never":
            return queryset.filter(expires_at__isnull=True)
        return queryset


class ReviewChangeList(ChangeList):
    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        # The rows need only the private section; the public Task (with its
        # history) can be large and is not shown.
        return super().get_queryset(request, exclude_parameters).defer("task")


@admin.register(AwaitingHumanTask)
class AwaitingHumanTaskAdmin(TaskAdminMixin, admin.ModelAdmin):
    """The review queue: Tasks in ``input-required`` / ``auth-required``."""

    list_display = ("task_link", "asks", "tool_call", "who", "waiting", "expires")
    list_display_links = None
    list_filter = (WaitingStateFilter, KindFilter, ExpiryFilter)
    search_fields = ("id", "context_id", "private__pending__prompt", "private__input__text")
    list_select_related = ("owner",)
    show_full_result_count = False
    ordering = ("-updated_at",)
    actions = None
    review_template = "admin/toolnexus_django/review.html"

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return ReviewChangeList

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra = {"title": gettext("Tasks awaiting a human"), **(extra_context or {})}
        return super().changelist_view(request, extra)

    # Reading: the dedicated permission implies seeing the queue.
    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return (
            super().has_view_permission(request, obj)
            or request.user.has_perm("toolnexus_django.view_taskrecord")
            or can_answer(request)
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    # -- columns --

    def _change_url(self, obj: TaskRecord) -> str:
        return reverse(
            f"{self.admin_site.name}:toolnexus_django_awaitinghumantask_change",
            args=[quote(obj.pk)],
        )

    @admin.display(description=_("suspended"), ordering="updated_at")
    def task_link(self, obj: AwaitingHumanTask) -> str:
        moment = timezone.localtime(obj.updated_at)
        return format_html(
            '<a href="{}">{}</a><br><span class="quiet">{}</span>',
            self._change_url(obj),
            moment.strftime("%Y-%m-%d %H:%M:%S"),
            Truncator(obj.pk).chars(13),
        )

    @admin.display(description=_("asks"))
    def asks(self, obj: AwaitingHumanTask) -> str:
        pending = _pending(obj)
        return format_html(
            "<strong>{}</strong><br>{}",
            str(pending.get("kind") or "?"),
            Truncator(str(pending.get("prompt") or "")).chars(100),
        )

    @admin.display(description=_("tool call"))
    def tool_call(self, obj: AwaitingHumanTask) -> str:
        call = halted_call(_private(obj))
        if call is None:
            return "-"
        return format_html(
            "<code>{}</code><br><code class='quiet'>{}</code>",
            call.name,
            Truncator(call.args_inline).chars(80),
        )

    @admin.display(description=_("owner / conversation"))
    def who(self, obj: AwaitingHumanTask) -> str:
        owner = obj.owner.get_username() if obj.owner is not None else gettext("anonymous")
        if not obj.context_id:
            return owner
        conversation = reverse(f"{self.admin_site.name}:toolnexus_django_taskrecord_changelist")
        return format_html(
            '{}<br><a class="quiet" href="{}?context_id={}" title="{}">{}</a>',
            owner,
            conversation,
            obj.context_id,
            gettext("All tasks of this conversation"),
            Truncator(obj.context_id).chars(13),
        )

    @admin.display(description=_("waiting for"))
    def waiting(self, obj: AwaitingHumanTask) -> str:
        return timesince(obj.updated_at)

    @admin.display(description=_("expires"), ordering="expires_at")
    def expires(self, obj: AwaitingHumanTask) -> str:
        return time_left(obj.expires_at)

    # -- the review page --

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The review page: GET shows the Task; POST answers it."""
        task_id = unquote(object_id)
        if request.method == "POST":
            if not can_answer(request):
                raise PermissionDenied
            return self._answer(request, task_id, extra_context)
        if request.method not in ("GET", "HEAD"):
            return HttpResponseBadRequest()
        obj = self.get_object(request, task_id)
        if obj is None:
            return self._gone(request, task_id)
        if not self.has_view_permission(request, obj):
            raise PermissionDenied
        return self._render(request, obj, self.answer_forms(_pending(obj)), extra_context)

    def answer_forms(
        self, pending: dict[str, Any], action: str | None = None, data: Any = None
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

    def _answer(
        self, request: HttpRequest, task_id: str, extra_context: dict[str, Any] | None
    ) -> HttpResponse:
        action = request.POST.get("_answer")
        request_id = request.POST.get("request_id")
        if action not in FORM_DECISIONS or not request_id:
            return HttpResponseBadRequest("The form does not say what it answers.")
        obj = TaskRecord.objects.filter(pk=task_id).select_related("owner").first()
        if obj is None:
            self.message_user(request, gettext("Task not found."), messages.ERROR)
            return HttpResponseRedirect(self._queue_url())
        pending = _pending(obj)
        if obj.state not in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED) or (
            pending.get("id") != request_id
        ):
            return self._refused(request, obj, request_id, None)
        forms_by_action = self.answer_forms(pending, action, request.POST)
        form = forms_by_action.get(action)
        if form is None:  # e.g. "approve" posted to an authorization request
            return HttpResponseBadRequest("This request cannot be answered that way.")
        if not form.is_valid():
            proxy = AwaitingHumanTask.objects.filter(pk=task_id).select_related("owner").first()
            return self._render(request, proxy or obj, forms_by_action, extra_context)
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
                return self._render(request, proxy or obj, forms_by_action, extra_context)
            fresh = TaskRecord.objects.filter(pk=task_id).first()
            return self._refused(request, fresh or obj, request_id, exc)
        self.message_user(
            request,
            gettext("Answered “%(prompt)s” (%(decision)s); the task resumes in the background.")
            % {
                "prompt": Truncator(str(pending.get("prompt") or obj.pk)).chars(80),
                "decision": FORM_DECISIONS[action],
            },
            messages.SUCCESS,
        )
        return HttpResponseRedirect(self._queue_url())

    def _refused(
        self,
        request: HttpRequest,
        obj: TaskRecord,
        request_id: str,
        exc: AnswerRefused | None,
    ) -> HttpResponse:
        """Say why an answer was not taken, and show the Task as it is now."""
        if exc is not None and exc.reason == "not-found":
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(self._queue_url())
        self.message_user(request, refusal_message(obj, request_id, exc), messages.ERROR)
        return HttpResponseRedirect(
            reverse(
                f"{self.admin_site.name}:toolnexus_django_taskrecord_change",
                args=[quote(obj.pk)],
            )
        )

    def _gone(self, request: HttpRequest, task_id: str) -> HttpResponse:
        """GET for a Task that no longer waits: show it read-only instead."""
        obj = TaskRecord.objects.filter(pk=task_id).first()
        if obj is None:
            self.message_user(
                request,
                gettext("There is no task with id “%(id)s”.")
                % {"id": Truncator(task_id).chars(100)},
                messages.WARNING,
            )
            return HttpResponseRedirect(self._queue_url())
        self.message_user(
            request,
            gettext("This task is %(state)s: it is not waiting for a person any more.")
            % {"state": obj.state},
            messages.INFO,
        )
        return HttpResponseRedirect(
            reverse(
                f"{self.admin_site.name}:toolnexus_django_taskrecord_change",
                args=[quote(obj.pk)],
            )
        )

    def _queue_url(self) -> str:
        return reverse(f"{self.admin_site.name}:toolnexus_django_awaitinghumantask_changelist")

    def _render(
        self,
        request: HttpRequest,
        obj: TaskRecord,
        forms_by_action: dict[str, forms.Form],
        extra_context: dict[str, Any] | None,
    ) -> HttpResponse:
        private = _private(obj)
        pending = _pending(obj)
        style = str(private.get("style") or "openai")
        turns = transcript_turns(private.get("transcript"), style)
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
        expires = _parse_time(pending.get("expiresAt"))
        answering = can_answer(request)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": gettext("Review task"),
            "subtitle": str(obj.pk),
            "original": obj,
            "task_id": obj.pk,
            "input_text": str((private.get("input") or {}).get("text") or ""),
            "pending": pending,
            "request_data_json": data_shown,
            "schema_json": pretty_json(schema) if schema is not None else None,
            "schema_note": schema_note,
            "auth_url": safe_link_url(pending.get("url"))
            if pending.get("kind") == "authorization"
            else None,
            "expires_at": expires,
            "time_left": time_left(expires),
            "call": halted_call(private),
            "system_turns": [t for t in turns if t.role == "system"],
            "turns": [t for t in turns if t.role != "system"],
            "style": style,
            "owner": obj.owner.get_username() if obj.owner is not None else None,
            "events": audit_events(obj),
            "can_answer": answering,
            "forms": forms_by_action if answering else {},
            "has_errors": any(f.is_bound and f.errors for f in forms_by_action.values()),
            "record_url": reverse(
                f"{self.admin_site.name}:toolnexus_django_taskrecord_change",
                args=[quote(obj.pk)],
            ),
            "has_view_permission": True,
            **(extra_context or {}),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.review_template, context)


def refusal_message(task: TaskRecord, request_id: str, exc: AnswerRefused | None) -> str:
    """What a reviewer is told when an answer is not taken. An answer to a
    Request someone already answered says so, even if the Task has moved on to
    a new Request since."""
    earlier = next(
        (
            e
            for e in reversed(_audit(task))
            if e.get("request") == request_id and e.get("decision") in DECISIONS
        ),
        None,
    )
    if earlier is not None:
        who = earlier.get("actor") or earlier.get("via") or "someone"
        return gettext(
            "This task was already answered (%(decision)s) by %(who)s at %(at)s; "
            "it is now %(state)s."
        ) % {
            "decision": earlier.get("decision"),
            "who": who,
            "at": earlier.get("at"),
            "state": task.state,
        }
    if exc is not None:
        return str(exc)
    if task.state in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
        return gettext("This task now waits on a different request; review it again.")
    return gettext("This task is %(state)s: it is not waiting for an answer.") % {
        "state": task.state
    }


__all__ = [
    "AwaitingHumanTaskAdmin",
    "TaskRecordAdmin",
    "halted_call",
    "transcript_turns",
]
