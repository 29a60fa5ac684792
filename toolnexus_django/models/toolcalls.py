"""The recorded outcome of an ``atomic=`` tool call (:mod:`toolnexus_django.tools.outcomes`)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from ..strictjson import StorageJSONEncoder


class ToolCallOutcome(models.Model):
    """What one ``atomic=`` tool call returned, written in the same transaction
    as the tool's own writes: a replay of the call (a resume after a crash)
    returns it instead of running the body again.

    Keyed by the Task, where the call is in the Task's transcript (the index
    of the model's message that made it: a model may reuse its ids on later
    turns) and the model's id for the call. No foreign key: the Task may live
    in another store, or another database than the tool's."""

    task_id = models.CharField(_("task"), max_length=255)
    #: The index, in the Task's transcript, of the model's message that made the call.
    turn = models.PositiveIntegerField(_("turn"))
    call_id = models.CharField(_("tool call id"), max_length=255)
    tool = models.CharField(_("tool"), max_length=255)
    #: toolnexus's ToolResult as a dict: output, is_error, metadata, parts.
    result = models.JSONField(_("result"), encoder=StorageJSONEncoder)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("tool call outcome")
        verbose_name_plural = _("tool call outcomes")
        constraints = [
            models.UniqueConstraint(fields=["task_id", "turn", "call_id"], name="tnx_outcome_call"),
        ]
        indexes = [models.Index(fields=["created_at"], name="tnx_outcome_created")]

    def __str__(self) -> str:
        return f"{self.task_id} #{self.turn} {self.call_id} {self.tool}"
