"""The admin's dashboard: what the agent server is doing, on one page.

Tasks open now and created per hour over the last day, the review queue's
size and oldest wait, decisions per reviewer, tool failures, push health
and tokens per owner and per day (the Task's token sum, kept in its row:
no tracing backend needed). Drawn by :mod:`.charts`.

Who may see it: users with the view (or change) permission on Tasks; the
page is the Tasks admin's (``<admin>/toolnexus_django/taskrecord/dashboard/``),
linked from the Tasks list and from the admin index (the "Dashboard" entry,
a proxy model with no permissions of its own).

Every query is bounded, whatever the table's size: a window of time (the
last day or week, both ends given: SQLite's planner picks the range over
a two-sided bound) and at most :data:`MOST_ROWS` rows read per chart
(:data:`READ_ROWS` where the rows themselves are read, not an index) —
when a window holds more, the chart starts at the newest rows' start and
says so; counts stop at :data:`COUNTED` ("10,000+"). The scans are over
indexes (``tnx_task_created_usage`` covers the Task charts);
benchmarks/indexes.py times them at a million Tasks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib import admin
from django.contrib.auth import get_permission_codename
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet, Sum
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.timesince import timesince
from django.utils.translation import gettext

from ..models import (
    AWAITING_HUMAN_STATES,
    PushConfig,
    PushDelivery,
    TaskDashboard,
    TaskEvent,
    TaskRecord,
    TaskState,
    ToolCallOutcome,
)
from .charts import Chart, bars, columns
from .display import owner_label
from .readonly import ReadOnlyAdmin

#: The most rows any one chart reads from an index (its window is cut to the
#: newest ones), and from the table (the rows' JSON: is_error, actors).
MOST_ROWS, READ_ROWS = 50_000, 20_000
#: Where a count stops: "10,000+" says enough of a queue or a state.
COUNTED = 10_000
#: The Tasks-per-hour window, and the window of the week-long charts.
DAY, WEEK = timedelta(hours=24), timedelta(days=7)
#: Rows stamped a little ahead (another server's clock) still count as now.
SKEW = timedelta(minutes=5)
#: The states a Task is still open in: few rows each, counted over the state index.
OPEN_STATES = ("submitted", "working", "input-required", "auth-required")
#: Reviewers, owners and tools shown by name; the rest are summed as "others".
TOP = 10


def can_view_dashboard(request: HttpRequest) -> bool:
    """The user may view Tasks (the model permission, not a reviewer's pass)."""
    opts = TaskRecord._meta
    user: Any = request.user
    return any(
        user.has_perm(f"{opts.app_label}.{get_permission_codename(action, opts)}")
        for action in ("view", "change")
    )


@dataclass
class Window:
    """Where a chart's rows start: ``since``, or later when the window holds
    more than :data:`MOST_ROWS` rows (``cut``)."""

    since: datetime
    until: datetime
    cut: bool = False
    most: int = MOST_ROWS


def window(
    rows: QuerySet[Any], field: str, since: datetime, until: datetime, most: int = MOST_ROWS
) -> Window:
    """The window of ``rows`` from ``since`` to ``until``, cut to the newest
    ``most``: one index probe for the ``most``-th newest value of ``field``."""
    edge = list(
        rows.filter(**{f"{field}__gte": since, f"{field}__lt": until})
        .order_by(f"-{field}")
        .values_list(field, flat=True)[most - 1 : most]
    )
    return Window(edge[0], until, cut=True, most=most) if edge else Window(since, until)


def _capped_count(rows: QuerySet[Any], column: str = "pk") -> int:
    """How many rows, up to COUNTED (``column``: one an index covers)."""
    return rows.order_by().values(column)[:COUNTED].count()


def _counted(n: int) -> str:
    return f"{n:,}+" if n >= COUNTED else f"{n:,}"


def open_tasks() -> Chart:
    labels = dict(TaskState.choices)
    rows = [
        (str(labels[s]), _capped_count(TaskRecord.objects.filter(state=s), "state"))
        for s in OPEN_STATES
    ]
    return Chart(
        gettext("Open tasks, by state"),
        bars(gettext("Open tasks, by state"), rows, keys=OPEN_STATES),
        [gettext("state"), gettext("tasks")],
        [[label, _counted(n)] for label, n in rows],
        gettext("Tasks not finished yet, now."),
    )


def slices(edges: list[datetime], since: datetime) -> Iterator[tuple[int, datetime, datetime]]:
    """Each bucket ``[edges[i], edges[i + 1])`` the window from ``since``
    reaches, cut at ``since``. One range query per bucket: an index range
    scan, and no per-row function (SQLite's date truncation is a Python
    call per row: 50,000 rows cost 350 ms)."""
    for i in range(len(edges) - 1):
        if edges[i + 1] > since:
            yield i, max(edges[i], since), edges[i + 1]


def tasks_per_hour(now: datetime) -> Chart:
    """Tasks created in each of the last 24 hours, by the state they are in now."""
    start = timezone.localtime(now).replace(minute=0, second=0, microsecond=0)
    hours = [start - timedelta(hours=23 - i) for i in range(25)]  # the last: the next hour
    span = window(TaskRecord.objects.all(), "created_at", hours[0], hours[-1])
    series = {s: [0] * 24 for s in TaskState.values}
    for i, lo, hi in slices(hours, span.since):
        found = TaskRecord.objects.filter(created_at__gte=lo, created_at__lt=hi).order_by()
        for state, n in found.values_list("state").annotate(n=Count("*")):
            if state in series:
                series[state][i] += n
    series = {s: v for s, v in series.items() if any(v)}
    hours = hours[:24]
    buckets = [h.strftime("%H:00") for h in hours]
    title = gettext("Tasks created per hour, last 24 hours")
    return Chart(
        title,
        columns(title, buckets, series, every=2, width=1100),
        [gettext("hour"), *series],
        [[b, *(f"{series[s][i]:,}" for s in series)] for i, b in enumerate(buckets)],
        _note(gettext("Coloured by the state each Task is in now."), span),
    )


@dataclass
class Queue:
    waiting: str
    oldest: str
    oldest_url: str


def review_queue(now: datetime, site: str = "admin") -> Queue:
    """The queue's size, and how long its longest-waiting Task has waited
    (since its last move: the suspension, or a reviewer's hold)."""
    waiting = TaskRecord.objects.filter(state__in=sorted(AWAITING_HUMAN_STATES))
    oldest = waiting.order_by("updated_at").values_list("pk", "updated_at").first()
    if oldest is None:
        return Queue("0", "", "")
    url = reverse(f"{site}:toolnexus_django_taskrecord_change", args=[oldest[0]])
    return Queue(_counted(_capped_count(waiting, "state")), timesince(oldest[1], now), url)


def decisions(now: datetime) -> Chart:
    """Answers given in the last week, per reviewer (TaskEvent ``answer`` rows)."""
    answers = TaskEvent.objects.filter(kind="answer")
    span = window(answers, "at", now - WEEK, now + SKEW, READ_ROWS)
    per_actor = (
        answers.filter(at__gte=span.since, at__lt=span.until)
        .order_by()
        .values_list("actor")
        .annotate(n=Count("pk"))
        .order_by("-n")
    )
    rows = _top([(actor or gettext("(unknown)"), n) for actor, n in per_actor])
    title = gettext("Decisions per reviewer, last 7 days")
    return Chart(
        title,
        bars(title, rows),
        [gettext("reviewer"), gettext("answers")],
        [[who, f"{n:,}"] for who, n in rows],
        _note(gettext("Answers to Requests (approvals, input), by who gave them."), span),
    )


def tool_failures(now: datetime) -> Chart:
    """Recorded tool calls (``atomic=`` tools) of the last week that failed, per tool."""
    calls = ToolCallOutcome.objects.all()
    span = window(calls, "created_at", now - WEEK, now + SKEW, READ_ROWS)
    per_tool = (
        calls.filter(created_at__gte=span.since, created_at__lt=span.until)
        .order_by()
        .values_list("tool")
        .annotate(n=Count("pk"), failed=Count("pk", filter=Q(result__is_error=True)))
        .order_by("-failed", "-n")
    )
    found = list(per_tool)
    rows = [(tool, failed) for tool, _n, failed in found if failed][:TOP]
    title = gettext("Tool failures, last 7 days")
    return Chart(
        title,
        bars(title, rows, keys=["failed"] * len(rows)),
        [gettext("tool"), gettext("failed"), gettext("calls")],
        [[tool, f"{failed:,}", f"{n:,}"] for tool, n, failed in found[:TOP]],
        _note(gettext("Calls of tools whose outcome is recorded (atomic= tools)."), span),
    )


def push_health(now: datetime) -> Chart:
    """Push deliveries of the last day by outcome; configs failing and disabled."""
    deliveries = PushDelivery.objects.all()
    span = window(deliveries, "at", now - DAY, now + SKEW, READ_ROWS)
    per_outcome = dict(
        deliveries.filter(at__gte=span.since, at__lt=span.until)
        .order_by()
        .values_list("outcome")
        .annotate(n=Count("pk"))
    )
    labels = dict(PushDelivery.Outcome.choices)
    rows = [(str(o), per_outcome.get(o, 0)) for o in labels if per_outcome.get(o)]
    enabled = PushConfig.objects.filter(disabled_at__isnull=True)
    failing = _capped_count(enabled.filter(next_attempt_at__isnull=False, failures__gt=0))
    disabled = _capped_count(PushConfig.objects.filter(disabled_at__isnull=False), "disabled_at")
    title = gettext("Push deliveries, last 24 hours")
    table = [[str(labels[o]), f"{n:,}"] for o, n in rows]
    table += [[gettext("configs failing now"), _counted(failing)]]
    table += [[gettext("configs disabled"), _counted(disabled)]]
    note = _note(gettext("Attempts by outcome; then the configs' health now."), span)
    return Chart(title, bars(title, rows), [gettext("outcome"), gettext("count")], table, note)


def tokens(now: datetime) -> tuple[Chart, Chart]:
    """Tokens per owner and per day, over the Tasks created in the last week."""
    start = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    start -= WEEK - timedelta(days=1)
    edges = [start + timedelta(days=n) for n in range(8)]  # the last: tomorrow
    span = window(TaskRecord.objects.all(), "created_at", start, edges[-1])
    recent = TaskRecord.objects.filter(created_at__gte=span.since, created_at__lt=span.until)
    per_owner = list(
        recent.values_list("owner")
        .annotate(tokens_in=Sum("input_tokens"), tokens_out=Sum("output_tokens"))
        .order_by("-tokens_in", "-tokens_out")[:TOP]
    )
    owners = _owner_names([owner for owner, _i, _o in per_owner])
    rows = [(owners.get(owner, gettext("anonymous")), i or 0, o or 0) for owner, i, o in per_owner]
    title = gettext("Tokens per owner, last 7 days")
    by_owner = Chart(
        title,
        bars(title, [(name, i + o) for name, i, o in rows]),
        [gettext("owner"), "input", "output"],
        [[name, f"{i:,}", f"{o:,}"] for name, i, o in rows],
        _note(gettext("Summed over each Task's runs and resumes; the top ten."), span),
    )
    series = {"input": [0] * 7, "output": [0] * 7}
    for n, lo, hi in slices(edges, span.since):
        day = TaskRecord.objects.filter(created_at__gte=lo, created_at__lt=hi)
        sums = day.aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"))
        series["input"][n], series["output"][n] = sums["i"] or 0, sums["o"] or 0
    days = [edge.date() for edge in edges[:7]]
    labels = [d.strftime("%a %d") for d in days]
    title = gettext("Tokens per day, last 7 days")
    by_day = Chart(
        title,
        columns(title, labels, series),
        [gettext("day"), "input", "output"],
        [[b, f"{series['input'][n]:,}", f"{series['output'][n]:,}"] for n, b in enumerate(labels)],
        _note(gettext("By the day each Task was created."), span),
    )
    return by_owner, by_day


def _owner_names(ids: list[Any]) -> dict[Any, str]:
    model: Any = TaskRecord._meta.get_field("owner").related_model
    users = model._default_manager.filter(pk__in=[i for i in ids if i is not None])
    return {u.pk: owner_label(u) for u in users}


def _top(rows: list[tuple[str, int]]) -> list[tuple[str, int]]:
    if len(rows) <= TOP:
        return rows
    return [*rows[: TOP - 1], (gettext("others"), sum(n for _, n in rows[TOP - 1 :]))]


def _note(text: str, span: Window) -> str:
    if not span.cut:
        return text
    since = timezone.localtime(span.since).strftime("%Y-%m-%d %H:%M")
    return text + " " + gettext("Only the newest %(n)s rows, since %(since)s.") % {
        "n": f"{span.most:,}", "since": since,
    }  # fmt: skip


def dashboard_view(model_admin: admin.ModelAdmin[Any]) -> Any:
    """The dashboard page of the Tasks admin ``model_admin``."""

    def view(request: HttpRequest) -> HttpResponse:
        if not can_view_dashboard(request):
            raise PermissionDenied
        now, site = timezone.now(), model_admin.admin_site.name
        by_owner, by_day = tokens(now)
        context = {
            **model_admin.admin_site.each_context(request),
            "opts": TaskRecord._meta,
            "title": gettext("Dashboard"),
            "queue": review_queue(now, site),
            "queue_url": reverse(f"{site}:toolnexus_django_awaitinghumantask_changelist"),
            "charts": [
                *(open_tasks(), tasks_per_hour(now), decisions(now)),
                *(tool_failures(now), push_health(now), by_owner, by_day),
            ],
        }
        return TemplateResponse(request, "admin/toolnexus_django/dashboard.html", context)

    return view


@admin.register(TaskDashboard)
class TaskDashboardAdmin(ReadOnlyAdmin):
    """The admin index's "Dashboard" entry: its list is the dashboard (no
    objects to add, change or delete)."""

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        view = self.admin_site.admin_view(self.changelist_view)
        return [path("", view, name="{}_{}_changelist".format(*info))]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        if not can_view_dashboard(request):
            raise PermissionDenied
        return HttpResponseRedirect(
            reverse(f"{self.admin_site.name}:toolnexus_django_taskrecord_dashboard")
        )

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return can_view_dashboard(request)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return can_view_dashboard(request)
