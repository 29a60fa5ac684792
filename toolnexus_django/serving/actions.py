"""What the wire may change, for one request (``a2a.methods.Actions``): start
a Task and schedule its run, answer one as its requester, cancel one, keep
its push configs. Both edges hand it to the wire; the wire itself never
imports ``review/`` or ``fulfilment/``."""

from __future__ import annotations

from typing import Any

from toolnexus import Answer

from .. import lifecycle
from ..a2a.pushconfig import PushConfigs, keeps_configs
from ..fulfilment.jobs import schedule_fulfilment
from ..lifecycle.messages import answer_data, user_message
from ..push.configs import DatabasePushConfigs
from ..push.local import LocalPushConfigs
from ..review import NotCancelable, TaskNotFound, answer_task, cancel_task
from ..stores import DjangoTaskStore, DuplicateMessage, TaskStore
from ..stores.base import Task


class EndpointActions:
    """What the wire may change, through ``store``."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store

    def start(self, message: dict[str, Any], *, owner: str | None, text: str) -> Task:
        try:
            task = lifecycle.submit(self.store, message, owner=owner, text=text).task
        except DuplicateMessage as repeat:
            # A retry of a send that already started a Task: that Task, no second run.
            existing = self.store.get(repeat.task_id)
            if existing is None:
                raise
            return existing
        schedule_fulfilment(task["id"], self.store)
        return task

    def answer(self, task: Task, message: dict[str, Any], *, owner: str | None) -> Task:
        pending = lifecycle.read(task).pending or {}
        return answer_task(
            task["id"],
            Answer(id=pending.get("id"), ok=True, data=answer_data(message)),
            decision="message",
            role="requester",
            actor=owner,
            via="a2a",
            message=user_message(message, task=task),
            store=self.store,
        )

    def push_configs(self) -> PushConfigs | None:
        if isinstance(self.store, DjangoTaskStore):
            return DatabasePushConfigs(self.store.using)
        return LocalPushConfigs(self.store) if keeps_configs(self.store) else None

    def cancel(self, task_id: str, *, owner: str | None) -> Task:
        try:
            return cancel_task(task_id, store=self.store, actor=owner, via="a2a")
        except (NotCancelable, TaskNotFound) as refused:
            state = getattr(refused, "state", "gone")
            raise lifecycle.IllegalMove("cancel", task_id, state, "done") from None
