"""The django store's live updates: rows of
:class:`toolnexus_django.models.TaskLiveUpdate` (see
:meth:`.base.TaskStore.add_live_updates`)."""

from __future__ import annotations

from typing import Any

#: The most rows one look for other processes' live updates reads.
MAX_ROWS_PER_LOOK = 10_000


class DatabaseLiveUpdates:
    """Live updates as rows of database ``using``: one row per batch a run
    writes (its items, numbered), a NOTIFY per row on PostgreSQL."""

    using: str
    keeps_live_updates = True

    @property
    def live_model(self) -> Any:
        from ..models import TaskLiveUpdate

        return TaskLiveUpdate

    def add_live_updates(self, task_id: str, seq: int, items: list[dict[str, Any]]) -> None:
        if items:
            last = int(items[-1]["n"])
            self.live_model.objects.using(self.using).create(
                task_id=task_id, seq=seq, last=last, items=items
            )

    def live_updates(self, task_id: str, seq: int, after: int = 0) -> list[dict[str, Any]]:
        rows = (
            self.live_model.objects.using(self.using)
            .filter(task_id=task_id, seq=seq, last__gt=after)
            .order_by("last")
            .values_list("items", flat=True)
        )
        return [item for items in rows for item in items if int(item.get("n") or 0) > after]

    def live_changes_since(self, cursor: Any) -> tuple[Any, dict[str, tuple[int, int]]] | None:
        rows = self.live_model.objects.using(self.using)
        if cursor is None:
            return rows.order_by("-id").values_list("id", flat=True).first() or 0, {}
        found = list(
            rows.filter(id__gt=cursor)
            .order_by("id")
            .values_list("id", "task_id", "seq", "last")[:MAX_ROWS_PER_LOOK]
        )
        newest: dict[str, tuple[int, int]] = {}
        for _, task_id, seq, last in found:
            newest[task_id] = max((seq, last), newest.get(task_id, (0, 0)))
        return (found[-1][0] if found else cursor), newest

    def drop_live_updates(self, task_id: str) -> None:
        self.live_model.objects.using(self.using).filter(task_id=task_id).delete()
