"""The MCP endpoint's audit rows."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


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
