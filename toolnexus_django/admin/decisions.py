"""Review decisions across Tasks: who answered, held, released or
approved what, and when (the Tasks' decision events, read-only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _

from ..lifecycle.events import RENAMED_KINDS, current
from ..models import TaskDecision
from ..review.reviewers import is_reviewer
from .readonly import ReadOnlyAdmin

#: How each decision event reads in the list.
DECISION_LABELS = {
    "approve": _("approved"),
    "decline": _("declined"),
    "reply": _("replied"),
    "authorize": _("sign-in recorded"),
    "message": _("answered by message"),
    "expire": _("expired"),
    "cancel": _("canceled"),
    "hold": _("held"),
    "release": _("released"),
}


#: A decision as events stored it before it was renamed (a hold was a "claim").
STORED_AS = {
    new: [new, old] for _, renamed in RENAMED_KINDS.values() for old, new in renamed.items()
}


class MineFilter(admin.SimpleListFilter):
    title = _("made by")
    parameter_name = "mine"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("1", _("my decisions"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "1":
            return queryset.filter(actor=request.user.get_username(), actor_kind="user")
        return queryset


class ReviewerFilter(admin.SimpleListFilter):
    title = _("reviewer")
    parameter_name = "reviewer"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        names = (
            TaskDecision.objects.filter(actor_kind="user")
            .exclude(actor="")
            .order_by("actor")
            .values_list("actor", flat=True)
            .distinct()[:100]
        )
        return [(name, name) for name in names]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value():
            return queryset.filter(actor=self.value())
        return queryset


class DecisionFilter(admin.SimpleListFilter):
    title = _("decision")
    parameter_name = "decision"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return list(DECISION_LABELS.items())

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value:
            return queryset.filter(private__decision__in=STORED_AS.get(value, [value]))
        return queryset


@admin.register(TaskDecision)
class TaskDecisionAdmin(ReadOnlyAdmin):
    """Every decision on every Task, newest first; filter by reviewer,
    decision and date ("my decisions" too)."""

    list_display = ("at", "task_link", "decision", "who", "request", "comment")
    list_display_links = None
    list_filter = (MineFilter, ReviewerFilter, DecisionFilter, "via")
    date_hierarchy = "at"
    search_fields = ("task__id", "actor", "private__comment")
    show_full_result_count = False
    actions = None

    @admin.display(description=_("task"), ordering="task")
    def task_link(self, obj: TaskDecision) -> str:
        url = reverse(
            f"{self.admin_site.name}:toolnexus_django_awaitinghumantask_review",
            args=[quote(obj.task_id)],
        )
        return format_html('<a href="{}">{}</a>', url, Truncator(obj.task_id).chars(13))

    @admin.display(description=_("decision"))
    def decision(self, obj: TaskDecision) -> str:
        private = current({"kind": obj.kind, "private": obj.private or {}})["private"]
        said = private.get("decision") or obj.kind
        label = str(DECISION_LABELS.get(said, said))
        if obj.kind == "review_approval":
            return format_html(
                "{} ({} of {})", label, private.get("approvals"), private.get("needed")
            )
        if private.get("arguments"):
            return format_html("{} <span class='quiet'>({})</span>", label, _("edited"))
        return label

    @admin.display(description=_("by"), ordering="actor")
    def who(self, obj: TaskDecision) -> str:
        if obj.actor_kind == "system":
            return format_html("<span class='quiet'>{}</span>", obj.actor or _("system"))
        return obj.actor or str(_("anonymous caller"))

    @admin.display(description=_("request"))
    def request(self, obj: TaskDecision) -> str:
        private = obj.private or {}
        return format_html(
            "{}<br><code class='quiet'>{}</code>",
            private.get("kind") or "-",
            Truncator(str(private.get("request") or "")).chars(30),
        )

    @admin.display(description=_("comment"))
    def comment(self, obj: TaskDecision) -> str:
        return Truncator(str((obj.private or {}).get("comment") or "")).chars(120) or "-"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return (
            super().has_view_permission(request, obj)
            or request.user.has_perm("toolnexus_django.view_taskrecord")
            or is_reviewer(request.user)
        )
