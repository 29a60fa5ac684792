"""How a Task's values meet the database's rows: the event columns, ids a
column can hold, instants written and read back."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from .base import MAX_ID_LENGTH

#: The columns of a TaskEvent row, as the event dicts name them.
EVENT_FIELDS = (
    "task_id",
    "seq",
    "kind",
    "from_state",
    "to_state",
    "at",
    "actor",
    "actor_kind",
    "via",
    "public",
    "private",
)


@functools.cache
def column_fields(model: Any) -> dict[str, Any]:
    return {f.attname: f for f in model._meta.concrete_fields}


def iso_instant(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def valid_id(id: Any) -> bool:
    # PostgreSQL rejects NUL in text, and ids longer than the column cannot
    # exist: both are simply unknown rather than a database error.
    return isinstance(id, str) and 0 < len(id) <= MAX_ID_LENGTH and "\x00" not in id


def aware(value: datetime | str) -> datetime:
    """A datetime column as read by a raw cursor (SQLite: a naive UTC string,
    read as Django's SQLite backend reads it)."""
    moment = parse_datetime(value) if isinstance(value, str) else value
    if moment is None:
        raise ValueError(f"{value!r} is not a datetime")
    return moment.replace(tzinfo=UTC) if timezone.is_naive(moment) else moment
