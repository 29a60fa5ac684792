"""The django store's selections of many Tasks: a ListTasks page and the
sweep's waiting and stale ids. Each takes the ``TaskRecord`` rows of the
store's database."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q

from .base import Task, TaskQuery


def page(rows: Any, query: TaskQuery) -> tuple[list[tuple[Task, datetime]], int]:
    """The public Tasks ``query`` selects, with their ``updated_at``, and
    how many match in all (ListTasks). The private section is never read."""
    rows = rows.filter(owner__isnull=True) if query.owner is None else rows.owned_by(query.owner)
    if query.context_id is not None:
        rows = rows.filter(context_id=query.context_id)
    if query.state is not None:
        rows = rows.filter(state=query.state)
    if query.updated_after is not None:
        rows = rows.filter(updated_at__gte=query.updated_after)
    total = rows.count()
    if query.after is not None:
        moment, tid = query.after
        rows = rows.filter(Q(updated_at__lt=moment) | Q(updated_at=moment, id__lt=tid))
    found = rows.order_by("-updated_at", "-id").values_list("id", "task", "updated_at")
    return [({**task, "id": tid}, updated) for tid, task, updated in found[: query.limit]], total


def waiting(rows: Any, expired_by: datetime | None) -> list[str]:
    """Tasks awaiting a human, soonest to expire first (those expired by
    ``expired_by``, if given)."""
    rows = rows.awaiting_human()
    if expired_by is not None:
        rows = rows.filter(expires_at__lte=expired_by)
    return list(rows.order_by("expires_at").values_list("id", flat=True)[:1000])


def stale(
    rows: Any, now: datetime, submitted_before: datetime, unleased_before: datetime
) -> list[str]:
    """Runs to recover: working past their lease (or unleased and untouched
    since ``unleased_before``), submitted and untouched since ``submitted_before``."""
    rows = rows.filter(
        Q(state="working", lease_expires_at__lte=now)
        | Q(state="working", lease_expires_at__isnull=True, updated_at__lte=unleased_before)
        | Q(state="submitted", updated_at__lte=submitted_before)
    )
    return list(rows.order_by("updated_at").values_list("id", flat=True)[:1000])
