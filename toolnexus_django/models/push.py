"""Push notifications' rows: a Task's configs and their deliveries."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from .tasks import TaskRecord


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
