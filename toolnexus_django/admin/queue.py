"""The review queue: "Tasks awaiting a human", with the review page of each
added through :meth:`AwaitingHumanTaskAdmin.get_urls`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.timesince import timesince
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ..models import AwaitingHumanTask, TaskState
from . import review_page
from .display import halted_call, private_of, time_left
from .tasks import TimelineMixin, can_answer

#: Request kinds the queue's filter names; any other kind is "other".
KNOWN_KINDS = ("approval", "input", "authorization")


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
class AwaitingHumanTaskAdmin(TimelineMixin, admin.ModelAdmin):
    """The review queue: Tasks in ``input-required`` / ``auth-required``."""

    list_display = ("task_link", "asks", "tool_call", "who", "waiting", "expires")
    list_display_links = None
    list_filter = (WaitingStateFilter, KindFilter, ExpiryFilter)
    search_fields = ("id", "context_id", "private__pending__prompt", "private__input__text")
    list_select_related = ("owner",)
    show_full_result_count = False
    ordering = ("-updated_at",)
    actions = None
    # The read-only page of a queued Task (its review page is review_url's).
    readonly_fields = ("id", "state", "context_id", "owner", "updated_at", "timeline")
    fields = readonly_fields
    review_template = "admin/toolnexus_django/review.html"

    def get_urls(self) -> list[URLPattern]:
        info = f"{self.opts.app_label}_{self.opts.model_name}"
        review = path(
            "<path:object_id>/review/",
            self.admin_site.admin_view(self.review_view),
            name=f"{info}_review",
        )
        return [review, *super().get_urls()]

    def review_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The review page: GET shows the Task; POST answers it."""
        return review_page.respond(self, request, object_id)

    def review_url(self, obj: Any) -> str:
        return reverse(
            f"{self.admin_site.name}:toolnexus_django_awaitinghumantask_review",
            args=[quote(obj.pk)],
        )

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

    @admin.display(description=_("suspended"), ordering="updated_at")
    def task_link(self, obj: AwaitingHumanTask) -> str:
        moment = timezone.localtime(obj.updated_at)
        return format_html(
            '<a href="{}">{}</a><br><span class="quiet">{}</span>',
            self.review_url(obj),
            moment.strftime("%Y-%m-%d %H:%M:%S"),
            Truncator(obj.pk).chars(13),
        )

    @admin.display(description=_("asks"))
    def asks(self, obj: AwaitingHumanTask) -> str:
        pending = private_of(obj).pending or {}
        return format_html(
            "<strong>{}</strong><br>{}",
            str(pending.get("kind") or "?"),
            Truncator(str(pending.get("prompt") or "")).chars(100),
        )

    @admin.display(description=_("tool call"))
    def tool_call(self, obj: AwaitingHumanTask) -> str:
        private = private_of(obj)
        call = halted_call(private.transcript, private.style or "openai")
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
