"""Tasks as rows of :class:`toolnexus_django.models.TaskRecord`."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from .base import MAX_ID_LENGTH, PRIVATE_KEY, Task, TaskStore, task_id_of


def _valid_id(id: Any) -> bool:
    # PostgreSQL rejects NUL in text, and ids longer than the column cannot
    # exist: both are simply unknown rather than a database error.
    return isinstance(id, str) and 0 < len(id) <= MAX_ID_LENGTH and "\x00" not in id


class DjangoTaskStore(TaskStore):
    """Rows in the ``TaskRecord`` table of database ``using``.

    ``save`` is a single upsert (INSERT ... ON CONFLICT DO UPDATE), so it
    costs one round trip whether the Task is new or not.
    """

    def __init__(self, using: str = "default") -> None:
        self.using = using

    @property
    def model(self) -> Any:
        from ..models import TaskRecord

        return TaskRecord

    def get(self, id: str) -> Task | None:
        if not _valid_id(id):
            return None
        row = (
            self.model.objects.using(self.using)
            .filter(pk=id)
            .values_list("task", "private")
            .first()
        )
        if row is None:
            return None
        task, private = row
        task = dict(task)
        if private:
            task[PRIVATE_KEY] = private
        return task

    def save(self, task: Task) -> None:
        tid = task_id_of(task)
        if not _valid_id(tid):
            raise ValueError(f"invalid Task id for the database store: {tid[:40]!r}")
        public = {k: v for k, v in task.items() if k != PRIVATE_KEY}
        private = task.get(PRIVATE_KEY) or {}
        status = task.get("status") or {}
        record = self.model(
            id=tid,
            context_id=str(task.get("contextId") or "")[:MAX_ID_LENGTH],
            state=str(status.get("state") or "submitted"),
            owner_id=private.get("owner"),
            task=public,
            private=private,
        )
        self.model.objects.using(self.using).bulk_create(
            [record],
            update_conflicts=True,
            unique_fields=["id"],
            update_fields=["context_id", "state", "owner", "task", "private", "updated_at"],
        )

    # The ORM's own async methods use thread-sensitive sync_to_async: do the same.
    async def aget(self, id: str) -> Task | None:
        return await sync_to_async(self.get)(id)

    async def asave(self, task: Task) -> None:
        await sync_to_async(self.save)(task)

    def __repr__(self) -> str:
        return f"<DjangoTaskStore using={self.using!r}>"
