"""Push notifications in the admin: each Task's configs and recent deliveries
(a section of the Task's page), every config across Tasks with a "Retry now"
action, and the delivery log across Tasks, failing deliveries first. Tokens
and credentials are never shown nor editable: the config pages leave those
fields out, and the Task's section reads only the columns it shows."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from ..models import PushConfig, PushDelivery, TaskRecord
from ..push import delivery
from ..push.locks import lock_configs
from .features import ListedWhenOn, push_on
from .objectpages import ObjectPagesMixin
from .readonly import ReadOnlyAdmin

#: Never shown, never editable: encrypted, but nobody's business in the admin.
SECRET_FIELDS = ("token", "credentials")
#: What a config's page shows (all read-only: a save would write back a stale cursor).
CONFIG_FIELDS = (
    "task_link",
    "config_id",
    "owner",
    "dialect",
    "url",
    "auth_scheme",
    "delivered_seq",
    "failures",
    "next_attempt_at",
    "disabled_at",
    "disabled_reason",
    "lease_owner",
    "lease_until",
    "created_at",
    "updated_at",
    "deliveries_link",
)
#: Deliveries that did not get through: retried, skipped, refused or disabling.
FAILING = (
    PushDelivery.Outcome.RETRY,
    PushDelivery.Outcome.GAVE_UP,
    PushDelivery.Outcome.REFUSED,
    PushDelivery.Outcome.DISABLED,
)
#: Deliveries shown on a Task's page (the log has them all).
RECENT_DELIVERIES = 20
#: What a Task's page shows of each config and delivery (columns read, no others).
SECTION_CONFIG_COLUMNS = (
    "config_id",
    "dialect",
    "url",
    "delivered_seq",
    "failures",
    "next_attempt_at",
    "disabled_at",
    "disabled_reason",
)
SECTION_DELIVERY_COLUMNS = (
    "seq",
    "notification_id",
    "attempt",
    "at",
    "outcome",
    "status_code",
    "error",
    "next_attempt_at",
)


def can_view_push(request: HttpRequest) -> bool:
    user = request.user
    return bool(
        user.is_active
        and (
            user.has_perm("toolnexus_django.view_pushconfig")
            or user.has_perm("toolnexus_django.change_pushconfig")
        )
    )


def task_url(site: admin.AdminSite, task_id: str) -> str:
    return reverse(f"{site.name}:toolnexus_django_taskrecord_change", args=[quote(task_id)])


def config_url(site: admin.AdminSite, pk: int) -> str:
    return reverse(f"{site.name}:toolnexus_django_pushconfig_change", args=[quote(pk)])


def deliveries_url(site: admin.AdminSite, **params: Any) -> str:
    """The delivery log, filtered (``status``: "failing" unless given)."""
    changelist = reverse(f"{site.name}:toolnexus_django_pushdelivery_changelist")
    return f"{changelist}?{urlencode(params)}"


def task_section(site: admin.AdminSite, obj: TaskRecord) -> SafeString:
    """A Task's configs and its latest deliveries, for the Task's page."""
    using = obj._state.db or "default"
    configs: list[dict[str, Any]] = [
        {**row, "admin_url": config_url(site, row["pk"])}
        for row in PushConfig.objects.using(using)
        .filter(task_id=obj.pk)
        .order_by("created_at", "id")
        .values("pk", *SECTION_CONFIG_COLUMNS)
    ]
    labels = dict(PushDelivery.Outcome.choices)
    deliveries: list[dict[str, Any]] = [
        {
            **row,
            "failing": row["outcome"] in FAILING,
            "outcome_label": labels.get(row["outcome"], row["outcome"]),
        }
        for row in PushDelivery.objects.using(using)
        .filter(config__task_id=obj.pk)
        .order_by("-at", "-id")
        .values("config__config_id", *SECTION_DELIVERY_COLUMNS)[:RECENT_DELIVERIES]
    ]
    context = {
        "configs": configs,
        "deliveries": deliveries,
        "all_url": deliveries_url(site, status="all", q=obj.pk),
        "failing_url": deliveries_url(site, status="failing", q=obj.pk),
    }
    return render_to_string("admin/toolnexus_django/includes/push.html", context)


# -- configs -------------------------------------------------------------------------------


class YesNoFilter(admin.SimpleListFilter):
    """A filter with two choices, each a lookup (subclasses name them)."""

    labels: tuple[Any, Any]
    yes: dict[str, Any]
    no: dict[str, Any]

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("yes", self.labels[0]), ("no", self.labels[1])]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(**self.yes)
        if self.value() == "no":
            return queryset.filter(**self.no)
        return queryset


class DisabledFilter(YesNoFilter):
    title = _("disabled")
    parameter_name = "disabled"
    labels = (_("disabled"), _("enabled"))
    yes = {"disabled_at__isnull": False}
    no = {"disabled_at__isnull": True}


class FailingFilter(YesNoFilter):
    title = _("failing")
    parameter_name = "failing"
    labels = (_("failing (failed attempts > 0)"), _("not failing"))
    yes = {"failures__gt": 0}
    no = {"failures": 0}


class TaskLinkMixin:
    admin_site: admin.AdminSite

    def _task_link(self, task_id: str) -> str:
        return format_html(
            '<a href="{}" title="{}">{}</a>',
            task_url(self.admin_site, task_id),
            task_id,
            Truncator(task_id).chars(13),
        )


@admin.register(PushConfig)
class PushConfigAdmin(ObjectPagesMixin, ListedWhenOn, TaskLinkMixin, admin.ModelAdmin):
    feature_on = staticmethod(push_on)

    list_display = (
        "config_id",
        "task_column",
        "url",
        "dialect",
        "delivered_seq",
        "failures",
        "next_attempt_at",
        "disabled_at",
        "why_disabled",
    )
    list_filter = (DisabledFilter, FailingFilter, "dialect")
    search_fields = ("url", "task__id", "config_id")
    show_full_result_count = False
    ordering = ("-updated_at", "-id")
    actions = ["retry_now"]
    exclude = SECRET_FIELDS
    fields = CONFIG_FIELDS
    readonly_fields = CONFIG_FIELDS

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a config is the A2A client's, made through the protocol

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The list's "Retry now" needs it; a config's own page stays read-only.
        return obj is None and super().has_change_permission(request)

    @admin.action(description=_("Retry now"), permissions=["change"])
    def retry_now(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """Re-enable the selected configs and deliver what they have pending."""
        using = queryset.db
        with transaction.atomic(using=using):
            # The lock order (push.locks): configs by id, no Task after them.
            pks = lock_configs(PushConfig.objects.using(using).filter(pk__in=queryset.values("pk")))
            PushConfig.objects.using(using).filter(pk__in=pks).update(
                disabled_at=None,
                disabled_reason="",
                failures=0,
                next_attempt_at=None,
                updated_at=timezone.now(),
            )
            delivery.schedule(pks, using=using)  # once this commits
        delivery.note_new_config()  # an enabled config again: moves schedule it
        self.message_user(
            request,
            ngettext(
                "%(count)d push config re-enabled and scheduled for delivery.",
                "%(count)d push configs re-enabled and scheduled for delivery.",
                len(pks),
            )
            % {"count": len(pks)},
            messages.SUCCESS,
        )

    @admin.display(description=_("task"), ordering="task_id")
    def task_column(self, obj: PushConfig) -> str:
        return self._task_link(obj.task_id)

    @admin.display(description=_("task"))
    def task_link(self, obj: PushConfig) -> str:
        return format_html(
            '<a href="{}">{}</a>', task_url(self.admin_site, obj.task_id), obj.task_id
        )

    @admin.display(description=_("why disabled"))
    def why_disabled(self, obj: PushConfig) -> str:
        return Truncator(obj.disabled_reason).chars(120) or "-"

    @admin.display(description=_("deliveries"))
    def deliveries_link(self, obj: PushConfig) -> str:
        return format_html(
            '<a href="{}">{}</a>',
            deliveries_url(self.admin_site, status="all", config=obj.pk),
            gettext("Every delivery of this config"),
        )


# -- deliveries ----------------------------------------------------------------------------


class DeliveryStatusFilter(admin.SimpleListFilter):
    """Failing deliveries unless asked otherwise: the page is for trouble."""

    title = _("outcome")
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            ("failing", _("failing (retry, skipped, refused, disabled)")),
            *PushDelivery.Outcome.choices,
            ("all", _("all")),
        ]

    def value(self) -> str:
        return str(super().value() or "failing")

    def choices(self, changelist: Any) -> Any:
        # No "All" entry of its own: "all" is a lookup, the default is "failing".
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == str(lookup),
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "failing":
            return queryset.filter(outcome__in=FAILING)
        if value in PushDelivery.Outcome.values:
            return queryset.filter(outcome=value)
        return queryset


class ConfigFilter(admin.SimpleListFilter):
    """One config's deliveries (the link on a config's page); no choices listed."""

    title = _("config")
    parameter_name = "config"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        value = self.value()
        return [(value, value)] if value and value.isdigit() else []

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value and value.isdigit():
            return queryset.filter(config_id=int(value))
        return queryset


@admin.register(PushDelivery)
class PushDeliveryAdmin(ListedWhenOn, TaskLinkMixin, ReadOnlyAdmin):
    """The delivery log across Tasks, newest first; failing ones by default."""

    feature_on = staticmethod(push_on)

    list_display = (
        "at",
        "task_column",
        "config_column",
        "notification_id",
        "attempt",
        "outcome",
        "status_code",
        "short_error",
        "next_attempt_at",
    )
    list_display_links = ("at",)
    list_filter = (DeliveryStatusFilter, ConfigFilter, "at")
    search_fields = ("config__task__id", "config__url", "notification_id", "error")
    list_select_related = ("config",)
    show_full_result_count = False
    ordering = ("-at", "-id")
    actions = None
    fields = (
        "task_link",
        "config_link",
        "seq",
        "notification_id",
        "attempt",
        "at",
        "outcome",
        "status_code",
        "error",
        "next_attempt_at",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # The rows need the config's id, URL and Task id only (never its secrets).
        own = [f.name for f in PushDelivery._meta.concrete_fields]
        config = ["config__config_id", "config__url", "config__task"]
        return super().get_queryset(request).select_related("config").only(*own, *config)

    @admin.display(description=_("task"), ordering="config__task_id")
    def task_column(self, obj: PushDelivery) -> str:
        return self._task_link(obj.config.task_id)

    @admin.display(description=_("config"))
    def config_column(self, obj: PushDelivery) -> str:
        return format_html(
            '<a href="{}">{}</a><br><span class="quiet">{}</span>',
            config_url(self.admin_site, obj.config_id),
            obj.config.config_id,
            Truncator(obj.config.url).chars(60),
        )

    @admin.display(description=_("error"))
    def short_error(self, obj: PushDelivery) -> str:
        return Truncator(obj.error).chars(120) or "-"

    @admin.display(description=_("task"))
    def task_link(self, obj: PushDelivery) -> str:
        return format_html(
            '<a href="{}">{}</a>', task_url(self.admin_site, obj.config.task_id), obj.config.task_id
        )

    @admin.display(description=_("config"))
    def config_link(self, obj: PushDelivery) -> str:
        return format_html(
            '<a href="{}">{}</a> &rarr; {}',
            config_url(self.admin_site, obj.config_id),
            obj.config.config_id,
            obj.config.url,
        )
