"""Database rows for the ``django`` task store."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from .stores.base import AWAITING_HUMAN_STATES, DECISION_KINDS, TERMINAL_STATES
from .strictjson import StorageJSONEncoder


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


class PushConfig(models.Model):
    """Where to push a Task's events (A2A push notifications): one of the
    Task's configs, owned as the Task is. Delivery follows the Task's event
    log from ``delivered_seq`` on, in order (:mod:`toolnexus_django.push`)."""

    task = models.ForeignKey(
        TaskRecord, verbose_name=_("task"), on_delete=models.CASCADE, related_name="push_configs"
    )
    #: The config's id within its Task (the client's, or a generated one).
    config_id = models.CharField(_("config id"), max_length=255)
    owner = models.CharField(_("owner"), max_length=255, blank=True, default="")
    #: The dialect the notifications are rendered in: "1.0", "0.3" or "toolnexus".
    dialect = models.CharField(_("dialect"), max_length=16, default="1.0")
    url = models.CharField(_("URL"), max_length=2048)
    #: Encrypted at rest (push.secrets): the token and the scheme's credentials.
    token = models.TextField(_("token (encrypted)"), blank=True, default="")
    auth_scheme = models.CharField(
        _("authentication scheme"), max_length=32, blank=True, default=""
    )
    credentials = models.TextField(_("credentials (encrypted)"), blank=True, default="")
    #: The last event delivered (or given up on); the next one is delivered next.
    delivered_seq = models.PositiveIntegerField(_("delivered up to event"), default=0)
    #: Consecutive failed attempts of the event being delivered.
    failures = models.PositiveIntegerField(_("failed attempts"), default=0)
    next_attempt_at = models.DateTimeField(_("next attempt"), null=True, blank=True)
    disabled_at = models.DateTimeField(_("disabled"), null=True, blank=True)
    disabled_reason = models.TextField(_("why disabled"), blank=True, default="")
    lease_owner = models.CharField(_("delivered by"), max_length=255, blank=True, default="")
    lease_until = models.DateTimeField(_("delivery lease until"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("push notification config")
        verbose_name_plural = _("push notification configs")
        ordering = ("task", "created_at", "id")
        constraints = [
            models.UniqueConstraint(fields=["task", "config_id"], name="tnx_push_task_config"),
        ]
        indexes = [
            # The sweep's question: which enabled configs are due?
            models.Index(fields=["disabled_at", "next_attempt_at"], name="tnx_push_due"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} -> {self.url}"


class PushDelivery(models.Model):
    """One attempt to deliver one notification (the delivery log)."""

    class Outcome(models.TextChoices):
        DELIVERED = "delivered", _("delivered")
        RETRY = "retry", _("failed; will retry")
        GAVE_UP = "gave-up", _("refused by the receiver; skipped")
        REFUSED = "refused", _("URL refused (not allowed)")
        DISABLED = "disabled", _("failed; config disabled")

    config = models.ForeignKey(
        PushConfig, verbose_name=_("config"), on_delete=models.CASCADE, related_name="deliveries"
    )
    seq = models.PositiveIntegerField(_("event"))
    #: The notification's id (X-A2A-Notification-Id): the SSE id of what it carries.
    notification_id = models.CharField(_("notification id"), max_length=64)
    attempt = models.PositiveIntegerField(_("attempt"), default=1)
    at = models.DateTimeField(_("at"), auto_now_add=True)
    outcome = models.CharField(_("outcome"), max_length=16, choices=Outcome.choices)
    status_code = models.PositiveIntegerField(_("HTTP status"), null=True, blank=True)
    error = models.TextField(_("error"), blank=True, default="")
    next_attempt_at = models.DateTimeField(_("next attempt"), null=True, blank=True)

    class Meta:
        verbose_name = _("push delivery")
        verbose_name_plural = _("push deliveries")
        ordering = ("-at", "-id")
        indexes = [
            models.Index(fields=["config", "-at"], name="tnx_push_delivery_config"),
            models.Index(fields=["outcome", "-at"], name="tnx_push_delivery_outcome"),
        ]

    def __str__(self) -> str:
        return f"{self.notification_id} #{self.attempt} {self.outcome}"


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


class McpCall(models.Model):
    """One ``tools/call`` at the MCP endpoint (``<prefix>/mcp``): who called
    which tool, a digest of the arguments (never the arguments), how long it
    took and how it ended. Written by :mod:`toolnexus_django.mcp.audit`."""

    class Outcome(models.TextChoices):
        OK = "ok", _("ok")
        ERROR = "error", _("error")

    class Reason(models.TextChoices):
        NONE = "", _("-")
        TOOL_ERROR = "tool-error", _("the tool reported an error")
        UNKNOWN_TOOL = "unknown-tool", _("no such tool")
        PENDING = "pending", _("needs a person (pending Request)")
        TIMEOUT = "timeout", _("timed out")
        BUSY = "busy", _("too many calls at once")
        INTERNAL = "internal", _("internal error")

    at = models.DateTimeField(_("at"))
    #: The caller's primary key as text; "" for anonymous callers.
    caller = models.CharField(_("caller"), max_length=255, blank=True, default="")
    caller_name = models.CharField(_("caller name"), max_length=255, blank=True, default="")
    tool = models.CharField(_("tool"), max_length=255)
    #: SHA-256 of the arguments as canonical JSON (sorted keys, no spaces).
    arguments_digest = models.CharField(_("arguments digest"), max_length=64)
    duration_ms = models.FloatField(_("duration (ms)"))
    outcome = models.CharField(_("outcome"), max_length=8, choices=Outcome.choices)
    reason = models.CharField(
        _("reason"), max_length=16, choices=Reason.choices, blank=True, default=""
    )
    #: The pending Request's id, when the tool suspended.
    request_id = models.CharField(_("request id"), max_length=255, blank=True, default="")

    class Meta:
        verbose_name = _("MCP call")
        verbose_name_plural = _("MCP calls")
        ordering = ("-at", "-id")
        indexes = [
            models.Index(fields=["-at"], name="tnx_mcp_call_at"),
            models.Index(fields=["outcome", "-at"], name="tnx_mcp_call_outcome"),
            models.Index(fields=["tool", "-at"], name="tnx_mcp_call_tool"),
            models.Index(fields=["caller", "-at"], name="tnx_mcp_call_caller"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} {self.outcome} at {self.at:%Y-%m-%d %H:%M:%S}"
