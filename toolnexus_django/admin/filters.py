"""The review queue's filters: state, request kind, expiry, tool, skill,
owner, and "held by me"; and the next Task to review, nobody else's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db.models import CharField, Q, QuerySet
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ..conf import toolnexus_settings
from ..models import AwaitingHumanTask, TaskState
from ..review.reviewers import HOLD_KEYS, hold_seconds, reviewer_name

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


class _HaltFilter(admin.SimpleListFilter):
    """By what the halted call recorded (``halt[key]``), among waiting Tasks."""

    key = ""

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        values = (
            AwaitingHumanTask.objects.order_by()
            .values_list(f"private__halt__{self.key}", flat=True)
            .distinct()[:100]
        )
        return [(v, v) for v in sorted({str(v) for v in values if v})]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value():
            return queryset.filter(**{f"private__halt__{self.key}": self.value()})
        return queryset


class ToolFilter(_HaltFilter):
    title = _("tool")
    parameter_name = "tool"
    key = "tool"


class SkillFilter(_HaltFilter):
    title = _("skill")
    parameter_name = "skill"
    key = "skill"


class OwnerFilter(admin.SimpleListFilter):
    """Whose Task it is: a user, or an anonymous caller of an open endpoint."""

    title = _("owner")
    parameter_name = "owner"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        rows = (
            AwaitingHumanTask.objects.filter(owner__isnull=False)
            .order_by()
            .values_list("owner_id", "owner__username")
            .distinct()[:100]
        )
        users = sorted(((str(pk), name) for pk, name in rows), key=lambda r: r[1])
        # Offered only when there is one: an endpoint that signs everyone in has none.
        if AwaitingHumanTask.objects.filter(owner__isnull=True).exists():
            return [*users, ("anonymous", _("anonymous caller"))]
        return users

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "anonymous":
            return queryset.filter(owner__isnull=True)
        if self.value():
            return queryset.filter(owner_id=self.value())
        return queryset


def with_holds(queryset: QuerySet[Any]) -> QuerySet[Any]:
    """``queryset`` with each Task's hold (who, since when) as plain text
    columns ``_hold_by`` / ``_hold_at`` (a JSON key's own lookups would
    parse a compared time as JSON) — also a hold stored under its old name."""
    return queryset.annotate(
        _hold_by=Coalesce(*(_text(f"private__review__{key}__by") for key in HOLD_KEYS)),
        _hold_at=Coalesce(*(_text(f"private__review__{key}__at") for key in HOLD_KEYS)),
    )


def _text(path: str) -> Cast:
    return Cast(KT(path), CharField())


def live_hold() -> Q:
    """Over :func:`with_holds`: a hold that lasts, one younger than
    ``REVIEW["HOLD_SECONDS"]`` (as ``review.reviewers.hold_of`` reads it). Holds
    store their time as ISO 8601 in UTC: as text, they sort as times."""
    cutoff = (timezone.now() - timedelta(seconds=hold_seconds())).isoformat()
    return Q(_hold_by__isnull=False, _hold_at__gte=cutoff)


class HoldFilter(admin.SimpleListFilter):
    """Held by me, by nobody, by others — as the queue's column says: a
    lapsed hold is nobody's."""

    title = _("held")
    parameter_name = "held"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("mine", _("by me")), ("none", _("by nobody")), ("others", _("by others"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() not in ("mine", "none", "others"):
            return queryset
        rows, live = with_holds(queryset), live_hold()
        mine = Q(_hold_by=request.user.get_username())
        if self.value() == "mine":
            return rows.filter(live & mine)
        if self.value() == "others":
            return rows.filter(live & ~mine)
        return rows.exclude(live)


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
