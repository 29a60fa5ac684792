"""What a stream shows between a running Task's moves, kept for other
processes: the coalesced answer chunks and tool calls of its current run
(:mod:`toolnexus_django.lifecycle.live`)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from ..strictjson import StorageJSONEncoder
from .tasks import TaskRecord


class TaskLiveUpdate(models.Model):
    """Live updates of one run, written a few at a time while it runs (only
    for a Task someone streams) and deleted when the run ends: its final
    event carries the whole answer. On PostgreSQL each row NOTIFYs the
    wake-up channel with ``<task id>:<seq>.<last>`` (migration 0013)."""

    task = models.ForeignKey(
        TaskRecord, verbose_name=_("task"), on_delete=models.CASCADE, related_name="live_updates"
    )
    #: The number of the event the run started from (its updates come after it).
    seq = models.PositiveIntegerField(_("after event"))
    #: The number of the last update in ``items`` (they are numbered from 1 per run).
    last = models.PositiveIntegerField(_("last update"))
    items = models.JSONField(_("updates"), encoder=StorageJSONEncoder)

    class Meta:
        verbose_name = _("live update")
        verbose_name_plural = _("live updates")
        indexes = [models.Index(fields=["task", "seq", "last"], name="tnx_live_task_seq")]

    def __str__(self) -> str:
        return f"{self.task_id} #{self.seq}.{self.last}"
