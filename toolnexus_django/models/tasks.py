"""A Task's rows: the Task, its events, its conversation, and the admin's
views of them (the review queue, the decisions)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from ..stores.base import AWAITING_HUMAN_STATES, DECISION_KINDS, TERMINAL_STATES
from ..strictjson import StorageJSONEncoder


class TaskState(models.TextChoices):
    """The canonical (toolnexus / A2A v0.3) Task states."""

    SUBMITTED = "submitted", _("submitted")
    WORKING = "working", _("working")
    INPUT_REQUIRED = "input-required", _("input required")
    AUTH_REQUIRED = "auth-required", _("auth required")
    COMPLETED = "completed", _("completed")
    FAILED = "failed", _("failed")
    CANCELED = "canceled", _("canceled")
    REJECTED = "rejected", _("rejected")


#: The encoder of the app's JSON fields (NUL, lone surrogates and NaN never
#: reach the database). The old name stays importable: migration 0001 uses it.
NulSafeJSONEncoder = StorageJSONEncoder


class TaskRecordQuerySet(models.QuerySet["TaskRecord"]):
    def in_state(self, *states: str) -> TaskRecordQuerySet:
        return self.filter(state__in=states)

    def awaiting_human(self) -> TaskRecordQuerySet:
        return self.filter(state__in=AWAITING_HUMAN_STATES)

    def terminal(self) -> TaskRecordQuerySet:
        return self.filter(state__in=TERMINAL_STATES)

    def owned_by(self, owner: Any) -> TaskRecordQuerySet:
        return self.filter(owner=owner)


class TaskRecord(models.Model):
    """One A2A Task. ``task`` is the public Task exactly as the wire renders it
    (canonical shape); ``private`` is the server-side part (input, pending
    Request, transcript) that never leaves the server. ``state``,
    ``context_id`` and ``owner`` mirror the JSON so they can be indexed."""

    id = models.CharField(_("id"), max_length=255, primary_key=True)
    context_id = models.CharField(_("context id"), max_length=255, blank=True, default="")
    state = models.CharField(
        _("state"), max_length=32, choices=TaskState.choices, default=TaskState.SUBMITTED
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("owner"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="toolnexus_tasks",
    )
    task = models.JSONField(_("task"), default=dict, encoder=StorageJSONEncoder)
    private = models.JSONField(
        _("server-side data"), default=dict, blank=True, encoder=StorageJSONEncoder
    )
    #: Bumped by every guarded transition (compare-and-set on this column).
    revision = models.PositiveBigIntegerField(_("revision"), default=0)
    #: When the pending Request expires (mirrors _private.pending.expiresAt).
    expires_at = models.DateTimeField(_("request expires"), null=True, blank=True)
    #: The worker running the Task and until when its claim holds (mirrors
    #: _private.lease); an expired lease means the worker died.
    lease_owner = models.CharField(_("held by"), max_length=255, blank=True, default="")
    lease_expires_at = models.DateTimeField(_("lease expires"), null=True, blank=True)
    #: How many times a run of this Task was started (mirrors _private.attempts).
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    #: Who sent the messageId that started the Task (idempotent sends: a
    #: repeat within IDEMPOTENCY_WINDOW returns this Task). Set once. NULL, not
    #: "", for "none": only keys are unique (the partial constraint below).
    message_key = models.CharField(  # noqa: DJ001
        _("message key"), max_length=512, null=True, blank=True, editable=False
    )
    #: The number of the Task's last event, and that event: written in the same
    #: statement as the move, a database trigger copies it into TaskEvent (one
    #: statement per move, no extra round trip; see migration 0005).
    event_seq = models.PositiveIntegerField(_("last event"), default=0)
    last_event = models.JSONField(
        _("last event's data"), null=True, blank=True, encoder=StorageJSONEncoder
    )
    #: Tokens of all the Task's runs and resumes (mirror _private.tokens): the
    #: dashboard's tokens per owner and per day. A database default too, so
    #: rows written by hand (benchmarks, raw INSERTs) need not name them.
    input_tokens = models.PositiveBigIntegerField(_("input tokens"), default=0, db_default=0)
    output_tokens = models.PositiveBigIntegerField(_("output tokens"), default=0, db_default=0)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    objects = TaskRecordQuerySet.as_manager()

    class Meta:
        verbose_name = _("task")
        verbose_name_plural = _("tasks")
        ordering = ("-created_at",)
        permissions = [("answer_task", _("Can answer tasks awaiting a human"))]
        indexes = [
            # "Which Tasks are in state X", newest activity first (admin, recovery).
            models.Index(fields=["state", "-updated_at"], name="tnx_task_state_updated"),
            # The review queue spans two states; a partial index keeps "newest
            # waiting first" an index scan however many Tasks have finished.
            models.Index(
                fields=["-updated_at"],
                name="tnx_task_awaiting_human",
                condition=models.Q(state__in=sorted(AWAITING_HUMAN_STATES)),
            ),
            # A caller's own Tasks, newest first (ListTasks, ownership checks).
            models.Index(fields=["owner", "-updated_at"], name="tnx_task_owner_updated"),
            # All Tasks of one conversation.
            models.Index(fields=["context_id"], name="tnx_task_context"),
            models.Index(fields=["-created_at"], name="tnx_task_created"),
            # The dashboard's recent Tasks by hour, state, owner and tokens: every
            # column it reads, so its scans are index-only (admin/dashboard.py).
            models.Index(
                fields=["created_at", "state", "owner", "input_tokens", "output_tokens"],
                name="tnx_task_created_usage",
            ),
            # Recovery: working Tasks by lease deadline, submitted ones by age.
            models.Index(
                fields=["lease_expires_at"],
                name="tnx_task_lease",
                condition=models.Q(state__in=["working"]),
            ),
            models.Index(
                fields=["updated_at"],
                name="tnx_task_submitted",
                condition=models.Q(state__in=["submitted"]),
            ),
            # The expiry sweep: only waiting Tasks with a deadline are indexed.
            models.Index(
                fields=["expires_at"],
                name="tnx_task_expiry",
                condition=models.Q(
                    expires_at__isnull=False, state__in=sorted(AWAITING_HUMAN_STATES)
                ),
            ),
        ]
        constraints = [
            # One Task per (owner, messageId). Partial, so SQLite adds it as an
            # index and does not rebuild the table (which would drop 0005's trigger).
            models.UniqueConstraint(
                fields=["message_key"],
                name="tnx_task_message_key",
                condition=models.Q(message_key__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.state})"

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES


class TaskEvent(models.Model):
    """One transition of a Task (see :mod:`toolnexus_django.lifecycle.events`),
    written in the same transaction as the change to its Task's row."""

    task = models.ForeignKey(
        TaskRecord, verbose_name=_("task"), on_delete=models.CASCADE, related_name="events"
    )
    #: 1 for the Task's first event, then one more per transition, no gaps.
    seq = models.PositiveIntegerField(_("number"))
    kind = models.CharField(_("move"), max_length=32)
    from_state = models.CharField(_("from"), max_length=32, blank=True, default="")
    to_state = models.CharField(_("to"), max_length=32)
    at = models.DateTimeField(_("at"))
    actor = models.CharField(_("by"), max_length=255, blank=True, default="")
    #: "user", "worker" or "system".
    actor_kind = models.CharField(_("actor kind"), max_length=16, default="system")
    via = models.CharField(_("via"), max_length=32, blank=True, default="")
    #: What anyone who may read the Task may see: the status it left, artifact ids.
    public = models.JSONField(_("public part"), default=dict, encoder=StorageJSONEncoder)
    #: Server-side only: decision, comment, error, attempts.
    private = models.JSONField(
        _("server-side part"), default=dict, blank=True, encoder=StorageJSONEncoder
    )

    class Meta:
        verbose_name = _("task event")
        verbose_name_plural = _("task events")
        ordering = ("task", "seq")
        constraints = [
            models.UniqueConstraint(fields=["task", "seq"], name="tnx_event_task_seq"),
        ]
        indexes = [
            # "Decisions across Tasks", newest first (the admin's timeline of moves).
            models.Index(fields=["kind", "-at"], name="tnx_event_kind_at"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} #{self.seq} {self.kind}"


class Conversation(models.Model):
    """The transcript of one A2A conversation of one owner, so an agent
    remembers earlier turns across restarts and processes. ``key`` is
    :func:`toolnexus_django.agent.conversations.conversation_key` of the owner and
    the ``contextId``: the same contextId from two owners is two
    conversations."""

    key = models.CharField(_("key"), max_length=512, primary_key=True)
    #: The owner's primary key as text; "" for anonymous callers.
    owner = models.CharField(_("owner"), max_length=255, blank=True, default="")
    context_id = models.CharField(_("context id"), max_length=255, blank=True, default="")
    messages = models.JSONField(_("messages"), default=list, encoder=StorageJSONEncoder)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        indexes = [models.Index(fields=["context_id"], name="tnx_conversation_context")]

    def __str__(self) -> str:
        return self.key


class AwaitingHumanManager(models.Manager["AwaitingHumanTask"]):
    def get_queryset(self) -> models.QuerySet[AwaitingHumanTask]:
        return super().get_queryset().filter(state__in=AWAITING_HUMAN_STATES)


class AwaitingHumanTask(TaskRecord):
    """The review queue: Tasks whose run waits on a person."""

    objects = AwaitingHumanManager()  # type: ignore[assignment, misc]

    class Meta:
        proxy = True
        verbose_name = _("task awaiting a human")
        # The admin lists an app's models by this name: one that sorts before
        # the others ("MCP calls", "Push ...", "Review decisions", "Tasks")
        # puts the queue first, on any AdminSite (admin/__init__.py says why).
        verbose_name_plural = _("awaiting a human")
        ordering = ("-updated_at",)


class TaskDashboard(TaskRecord):
    """The admin's dashboard of Tasks (admin/dashboard.py): a proxy only so
    the admin index lists it; its page is the Tasks admin's."""

    class Meta:
        proxy = True
        verbose_name = _("dashboard")
        # Sorts after "Awaiting a human" and before the other entries.
        verbose_name_plural = _("dashboard")
        default_permissions = ()


class DecisionManager(models.Manager["TaskDecision"]):
    def get_queryset(self) -> models.QuerySet[TaskDecision]:
        return super().get_queryset().filter(kind__in=sorted(DECISION_KINDS))


class TaskDecision(TaskEvent):
    """The decisions people (and expiry) made on Tasks: answers, claims,
    releases, first approvals, expiries — the admin's list across Tasks."""

    objects = DecisionManager()  # type: ignore[misc]

    class Meta:
        proxy = True
        verbose_name = _("review decision")
        verbose_name_plural = _("review decisions")
        ordering = ("-at", "-id")
