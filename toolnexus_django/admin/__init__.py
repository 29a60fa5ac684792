"""Tasks in the admin: every Task read-only with its timeline
(:mod:`.tasks`), and the human-review queue, "Tasks awaiting a human"
(:mod:`.queue`), whose review page (:mod:`.review_page`) answers a
suspended run; push notification configs and their deliveries
(:mod:`.push`). What the pages show of a Task is in :mod:`.display`."""

from .display import halted_call, safe_link_url, time_left, transcript_turns
from .push import PushConfigAdmin, PushDeliveryAdmin
from .queue import AwaitingHumanTaskAdmin
from .tasks import TaskRecordAdmin

__all__ = [
    "AwaitingHumanTaskAdmin",
    "PushConfigAdmin",
    "PushDeliveryAdmin",
    "TaskRecordAdmin",
    "halted_call",
    "safe_link_url",
    "time_left",
    "transcript_turns",
]
