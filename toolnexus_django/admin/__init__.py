"""Tasks in the admin: every Task read-only with its timeline
(:mod:`.tasks`), and the human-review queue, "Tasks awaiting a human"
(:mod:`.queue`), with its filters (:mod:`.filters`) and its pages —
class-based views that hold the queue's ModelAdmin: the review page that
answers a suspended run (:mod:`.review_view`, what it shows in
:mod:`.review_context`), holds and "review next" (:mod:`.hold_views`) — and
its bulk actions (:mod:`.bulk_actions`). What a
reviewer may do, and the moves, are :mod:`toolnexus_django.review`'s. The
review decisions across Tasks (:mod:`.decisions`), also kept in Django's
admin log (:mod:`.history`); push notification configs and their
deliveries (:mod:`.push`). What the pages show of a Task is in
:mod:`.display`."""

from .decisions import TaskDecisionAdmin
from .display import halted_call, safe_link_url, time_left, transcript_turns
from .mcp import McpCallAdmin  # noqa: F401  (the MCP endpoint's calls)
from .push import PushConfigAdmin, PushDeliveryAdmin
from .queue import AwaitingHumanTaskAdmin
from .tasks import TaskRecordAdmin

__all__ = [
    "AwaitingHumanTaskAdmin",
    "PushConfigAdmin",
    "PushDeliveryAdmin",
    "TaskDecisionAdmin",
    "TaskRecordAdmin",
    "halted_call",
    "safe_link_url",
    "time_left",
    "transcript_turns",
]
