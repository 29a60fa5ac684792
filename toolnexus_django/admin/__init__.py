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
deliveries (:mod:`.push`); the dashboard (:mod:`.dashboard`, drawn by
:mod:`.charts`). What the pages show of a Task is in
:mod:`.display`, what it came to (the top of its page) in :mod:`.outcome`.

The admin index lists the review queue first. Django sorts an app's models
by their plural names, and the only per-model hook, an AdminSite's
``get_app_list``, would make every project use this app's AdminSite (or
patch Django's): so the order comes from the names themselves — the queue
is "Awaiting a human", which sorts before "MCP calls", "Push ...", "Review
decisions" and "Tasks" on any AdminSite. The entries of features that are
off (push, MCP) are not listed at all (:mod:`.features`)."""

from .dashboard import TaskDashboardAdmin
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
    "TaskDashboardAdmin",
    "TaskDecisionAdmin",
    "TaskRecordAdmin",
    "halted_call",
    "safe_link_url",
    "time_left",
    "transcript_turns",
]
