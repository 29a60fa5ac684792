"""The one order in which push configs' rows are locked (the django store).

PostgreSQL locks rows; two transactions that take the same rows in opposite
orders deadlock (one of them fails). Every writer of push configs therefore
locks, in this order, only what it needs:

1. the Task's row (``FOR NO KEY UPDATE``: the Task's moves and their event
   inserts' foreign-key checks are not blocked), when configs of that Task are
   added, replaced or deleted — :func:`lock_task`;
2. then config rows, in id order, and only theirs (``FOR UPDATE OF`` the
   config: a join to the Task — the model's default ordering is by Task —
   would lock the Task's row too, after the config's) — :func:`lock_configs`;
3. then their delivery rows (deleted with their config; the delivery log
   otherwise only inserts).

No transaction locks a Task after one of its configs, nor a config after a
delivery row. The delivery's claim, lease renewal, release and cursor writes
each update one config row in one statement (step 2 alone); the attempts it
logs insert delivery rows (step 3). Reads (get, list, what is due) lock
nothing. SQLite takes one lock for the whole database, so there the order
holds trivially.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet


def lock_task(using: str, task_id: str) -> int | None:
    """Lock the Task's row (step 1, in the caller's transaction); its
    ``event_seq``, or None when there is no such Task."""
    from ..models import TaskRecord

    seq = list(
        TaskRecord.objects.using(using)
        .select_for_update(no_key=True)
        .filter(pk=task_id)
        .order_by()
        .values_list("event_seq", flat=True)
    )
    return int(seq[0]) if seq else None


def lock_configs(rows: QuerySet[Any], *fields: str) -> list[Any]:
    """Lock these config rows in id order (step 2, in the caller's
    transaction); their ``fields`` (default: the pk), in that order."""
    locked = rows.select_for_update(of=("self",)).order_by("pk")
    if len(fields) > 1:
        return list(locked.values_list(*fields))
    return list(locked.values_list(fields[0] if fields else "pk", flat=True))


__all__ = ["lock_configs", "lock_task"]
