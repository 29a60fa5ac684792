"""The app's database rows, one module per part: a Task's (:mod:`.tasks`),
push notifications' (:mod:`.push`), the MCP audit's (:mod:`.mcp`) and the
recorded outcomes of ``atomic=`` tool calls (:mod:`.toolcalls`) and the live
updates of running Tasks (:mod:`.live`)."""

# The state sets, importable from here as when this was one module.
from ..stores.base import AWAITING_HUMAN_STATES, DECISION_KINDS, TERMINAL_STATES
from .live import TaskLiveUpdate
from .mcp import McpCall
from .push import PushConfig, PushDelivery
from .tasks import (
    AwaitingHumanManager,
    AwaitingHumanTask,
    Conversation,
    DecisionManager,
    NulSafeJSONEncoder,
    TaskDashboard,
    TaskDecision,
    TaskEvent,
    TaskRecord,
    TaskRecordQuerySet,
    TaskState,
)
from .toolcalls import ToolCallOutcome

__all__ = [
    "AWAITING_HUMAN_STATES",
    "DECISION_KINDS",
    "TERMINAL_STATES",
    "AwaitingHumanManager",
    "AwaitingHumanTask",
    "Conversation",
    "DecisionManager",
    "McpCall",
    "NulSafeJSONEncoder",
    "PushConfig",
    "PushDelivery",
    "TaskDashboard",
    "TaskDecision",
    "TaskEvent",
    "TaskLiveUpdate",
    "TaskRecord",
    "TaskRecordQuerySet",
    "TaskState",
    "ToolCallOutcome",
]
