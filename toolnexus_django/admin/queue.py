"""The review queue: "Tasks awaiting a human", with the review page of each,
holds and "review next" — class-based views holding this ModelAdmin, added
by :meth:`AwaitingHumanTaskAdmin.get_urls` — and the bulk decisions, its
actions."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.template.loader import render_to_string
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.timesince import timesince
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ..models import AwaitingHumanTask
from ..review.reviewers import is_own_request, is_reviewer, review_state
from .bulk_actions import approve_selected, decline_selected
from .display import halted_call, owner_label, private_of, server_side, time_left
from .filters import (
    ExpiryFilter,
    HoldFilter,
    KindFilter,
    OwnerFilter,
    SkillFilter,
    ToolFilter,
    WaitingStateFilter,
)
from .hold_views import HoldView, NextView, ReleaseView
from .readonly import ReadOnlyAdmin
from .review_view import QueuePage, ReviewView
from .tasks import TimelineMixin


class ReviewChangeList(ChangeList):
    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        # The rows need only the private section; the public Task (with its
        # history) can be large and is not shown.
        return super().get_queryset(request, exclude_parameters).defer("task")


@admin.register(AwaitingHumanTask)
class AwaitingHumanTaskAdmin(TimelineMixin, ReadOnlyAdmin):
    """The review queue: Tasks in ``input-required`` / ``auth-required``."""

    list_display = ("task_link", "asks", "tool_call", "review", "who", "expires")
    list_display_links = None
    list_filter = (
        WaitingStateFilter, KindFilter, ToolFilter, SkillFilter, OwnerFilter, HoldFilter,
        ExpiryFilter,
    )  # fmt: skip
    # The prompt, the tool's name and its arguments, the original request, ids.
    search_fields = (
        "id", "context_id", "private__pending__prompt", "private__input__text",
        "private__halt__tool", "private__halt__arguments",
    )  # fmt: skip
    list_select_related = ("owner",)
    show_full_result_count = False
    ordering = ("-updated_at",)
    actions = (approve_selected, decline_selected)
    # The read-only page of a queued Task (its review page is review_url's).
    readonly_fields = ("id", "state", "context_id", "owner", "updated_at", "timeline")
    fields = readonly_fields

    def get_urls(self) -> list[URLPattern]:
        info = f"{self.opts.app_label}_{self.opts.model_name}"
        see, answer = self.has_view_permission, self.has_answer_permission
        pages: list[tuple[str, str, type[QueuePage], Callable[[HttpRequest], bool]]] = [
            ("next/", "next", NextView, see),
            ("<path:object_id>/review/", "review", ReviewView, see),
            ("<path:object_id>/hold/", "hold", HoldView, answer),
            ("<path:object_id>/release/", "release", ReleaseView, answer),
        ]
        added = [
            path(
                route, self.guarded(page.as_view(model_admin=self), allowed), name=f"{info}_{name}"
            )
            for route, name, page, allowed in pages
        ]
        return [*added, *super().get_urls()]

    def guarded(
        self, view: Callable[..., HttpResponseBase], allowed: Callable[[HttpRequest], bool]
    ) -> Callable[..., HttpResponseBase]:
        """``view`` behind the admin's login and ``allowed`` (the queue's own
        permission check), before it reads anything: a staff user without the
        permission gets the queue's 403 and learns nothing of any Task — not
        an id in a redirect, nor whether a Task exists (issue 18). Every URL
        added here goes through it."""

        @wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not allowed(request):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return self.admin_site.admin_view(checked)

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

    # The bulk actions' permission ("answer"): answering needs answer_task.
    def has_answer_permission(self, request: HttpRequest) -> bool:
        return is_reviewer(request.user)

    # Reading: the dedicated permission implies seeing the queue.
    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return (
            super().has_view_permission(request, obj)
            or request.user.has_perm("toolnexus_django.view_taskrecord")
            or is_reviewer(request.user)
        )

    # -- columns --

    @admin.display(description=_("suspended"), ordering="updated_at")
    def task_link(self, obj: AwaitingHumanTask) -> str:
        moment = timezone.localtime(obj.updated_at)
        return format_html(
            '<a href="{}">{}</a><br><span class="quiet" title="{}">{}</span>',
            self.review_url(obj),
            moment.strftime("%Y-%m-%d %H:%M"),
            obj.pk,
            gettext("waiting %(time)s") % {"time": timesince(obj.updated_at)},
        )

    @admin.display(description=_("asks"))
    def asks(self, obj: AwaitingHumanTask) -> str:
        # The question is what a reviewer reads first: it opens the review page.
        pending = private_of(obj).pending or {}
        prompt = Truncator(str(pending.get("prompt") or "")).chars(90)
        return format_html(
            '<strong>{}</strong><br><a href="{}" class="tnx-prompt-link">{}</a>',
            str(pending.get("kind") or "?"),
            self.review_url(obj),
            prompt or gettext("Review it"),
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
            Truncator(call.args_inline).chars(60),
        )

    def get_list_display(self, request: HttpRequest) -> Any:
        # The review column also says which Tasks the reviewer sent (and so
        # may not answer): it needs the request's user, so it is made per request.
        @admin.display(description=_("review"))
        def review(obj: AwaitingHumanTask) -> str:
            return self.review(obj, request.user)

        return [review if name == "review" else name for name in self.list_display]

    def review(self, obj: AwaitingHumanTask, user: Any = None) -> str:
        """Who holds the Task, for four eyes how many approved, and whether
        it is ``user``'s own request."""
        task = server_side(obj)
        state = {**review_state(task), "own": is_own_request(user, task)}
        return render_to_string("admin/toolnexus_django/includes/review_state.html", state)

    @admin.display(description=_("owner / conversation"))
    def who(self, obj: AwaitingHumanTask) -> str:
        owner = owner_label(obj.owner)
        if not obj.context_id:
            return owner
        conversation = reverse(f"{self.admin_site.name}:toolnexus_django_taskrecord_changelist")
        return format_html(
            '{}<br><a class="quiet" href="{}?{}" title="{}">{}</a>',
            owner,
            conversation,
            # The peer's contextId is a query value, not more of the query.
            urlencode({"context_id": obj.context_id}),
            gettext("All tasks of this conversation"),
            Truncator(obj.context_id).chars(13),
        )

    @admin.display(description=_("expires"), ordering="expires_at")
    def expires(self, obj: AwaitingHumanTask) -> str:
        return time_left(obj.expires_at)
