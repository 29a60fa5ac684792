"""Every Task, read-only: the stored Task page — what it came to first
(:mod:`.outcome`), then its fields, its timeline and, folded, its JSON."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin import AdminSite
from django.contrib.admin.utils import quote
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import lifecycle
from ..jsontree import dumps_shown
from ..models import TaskRecord, TaskState
from ..review.reviewers import is_reviewer
from .actors import user_link
from .dashboard import can_view_dashboard, dashboard_view
from .display import owner_label, task_of, timeline
from .objectpages import ObjectPagesMixin
from .outcome import task_outcome
from .push import can_view_push, task_section

#: Where a Task's page keeps the viewer's links to users (:meth:`TimelineMixin.get_object`).
USER_LINK = "_tnx_user_link"


class TimelineMixin:
    """What both Task admins show: the Task's events, read-only, each person
    by name — linked to their page for a viewer who may see users."""

    admin_site: AdminSite

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        obj = super().get_object(request, object_id, from_field)  # type: ignore[misc]
        if obj is not None:
            # A read-only field gets the object, not the request: the object
            # (fetched for this request) carries what this viewer may follow.
            setattr(obj, USER_LINK, user_link(self.admin_site, request))
        return obj

    @admin.display(description=_("timeline"))
    def timeline(self, obj: TaskRecord) -> SafeString:
        events = timeline(obj, getattr(obj, USER_LINK, None))
        return render_to_string("admin/toolnexus_django/includes/timeline.html", {"events": events})


@admin.register(TaskRecord)
class TaskRecordAdmin(ObjectPagesMixin, TimelineMixin, admin.ModelAdmin):
    list_display = ("id", "state", "context_id", "owner_name", "created_at", "updated_at")
    list_filter = ("state", "created_at", "updated_at")
    search_fields = ("id", "context_id")
    date_hierarchy = "created_at"
    list_select_related = ("owner",)
    show_full_result_count = False  # COUNT(*) over a million rows on every page is waste
    readonly_fields = (
        "id",
        "state",
        "context_id",
        "owner_name",
        "created_at",
        "updated_at",
        "timeline",
        "push_notifications",
        "task_json",
        "private_json",
    )
    # Each section says what its fields mean, for someone new to A2A.
    fieldsets = (
        (
            None,
            {
                "fields": ("id", "state", "context_id", "owner_name", "created_at",
                           "updated_at"),
                "description": _(
                    "A task is one request a peer sent to the agent. Its state is A2A's; "
                    "the context id groups the tasks of one conversation; the owner is the "
                    "user whose credentials sent it."
                ),
            },
        ),
        (
            _("What happened"),
            {
                "fields": ("timeline",),
                "description": _(
                    "Every move of the task, oldest first: who or what made it (a user, a "
                    "worker, the system), from which state to which, and any decision."
                ),
            },
        ),
        (
            _("Push notifications"),
            {
                "fields": ("push_notifications",),
                "description": _("Where the task's changes are pushed, and how that went."),
            },
        ),
        (
            _("Stored data"),
            {
                # Folded (a <details>): the summary above says what matters.
                "classes": ("collapse",),
                "fields": ("task_json", "private_json"),
                "description": _(
                    "The task exactly as peers read it, and the server-side part (the "
                    "transcript, the pending request, the lease) that never leaves the server."
                ),
            },
        ),
    )  # fmt: skip

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if can_view_push(request):
            return self.fieldsets
        return [fs for fs in self.fieldsets if "push_notifications" not in fs[1]["fields"]]

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> HttpResponse:
        if obj is not None:
            outcome = {"outcome": task_outcome(obj), "review_link": self.review_link(obj)}
            context = {**context, **outcome}
        return super().render_change_form(request, context, add, change, form_url, obj)

    def review_link(self, obj: TaskRecord) -> str:
        """Where a person answers (or answered) what the run asked ("" if
        it never asked anyone)."""
        url = reverse(
            f"{self.admin_site.name}:toolnexus_django_awaitinghumantask_review",
            args=[quote(obj.pk)],
        )
        if obj.state in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
            return format_html('<a href="{}">{}</a>', url, gettext("Answer it in the review queue"))
        if lifecycle.read(task_of(obj)).reviewed is not None:
            return format_html(
                '<a href="{}">{}</a>', url, gettext("Read its review: what was asked and decided")
            )
        return ""

    @admin.display(description=_("owner"), ordering="owner")
    def owner_name(self, obj: TaskRecord) -> str:
        return owner_label(obj.owner)

    @admin.display(description=_("push notifications"))
    def push_notifications(self, obj: TaskRecord) -> SafeString:
        return task_section(self.admin_site, obj)

    @admin.display(description=_("task (as peers see it)"))
    def task_json(self, obj: TaskRecord) -> str:
        return format_html("<pre>{}</pre>", dumps_shown(obj.task, indent=2, ensure_ascii=False))

    @admin.display(description=_("server-side data"))
    def private_json(self, obj: TaskRecord) -> str:
        return format_html("<pre>{}</pre>", dumps_shown(obj.private, indent=2, ensure_ascii=False))

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Reviewers land here when an answer is refused: let them read the Task.
        return super().has_view_permission(request, obj) or is_reviewer(request.user)

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
        if can_view_dashboard(request):
            extra["dashboard_url"] = reverse(
                f"{self.admin_site.name}:toolnexus_django_taskrecord_dashboard"
            )
        return super().changelist_view(request, extra)

    def get_urls(self) -> list[URLPattern]:
        # The dashboard (admin/dashboard.py): Tasks' page, Tasks' permission.
        view = self.admin_site.admin_view(dashboard_view(self))
        dashboard = path("dashboard/", view, name="toolnexus_django_taskrecord_dashboard")
        return [dashboard, *super().get_urls()]
