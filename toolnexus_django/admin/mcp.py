"""MCP calls in the admin: every ``tools/call`` at ``<prefix>/mcp``, read-only,
newest first — who called which tool, the digest of its arguments, how long
it took and how it ended (``MCP["AUDIT"]``)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from ..models import McpCall
from .features import ListedWhenOn, mcp_on
from .readonly import ReadOnlyAdmin


@admin.register(McpCall)
class McpCallAdmin(ListedWhenOn, ReadOnlyAdmin):
    feature_on = staticmethod(mcp_on)
    list_display = (
        "at",
        "tool",
        "caller_display",
        "outcome",
        "reason",
        "duration_display",
        "request_id",
    )
    list_filter = ("outcome", "reason", "tool")
    search_fields = ("tool", "caller", "caller_name", "request_id", "arguments_digest")
    date_hierarchy = "at"
    ordering = ("-at", "-id")
    list_per_page = 100
    fields = (
        "at",
        "tool",
        "caller",
        "caller_name",
        "outcome",
        "reason",
        "request_id",
        "duration_ms",
        "arguments_digest",
    )
    readonly_fields = fields

    @admin.display(description=_("caller"), ordering="caller_name")
    def caller_display(self, call: McpCall) -> str:
        return call.caller_name or call.caller or str(_("anonymous"))

    @admin.display(description=_("duration"), ordering="duration_ms")
    def duration_display(self, call: McpCall) -> str:
        return f"{call.duration_ms:.1f} ms"
