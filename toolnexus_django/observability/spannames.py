"""The names spans and their attributes carry: OpenTelemetry's GenAI
conventions (``gen_ai.*``) and their A2A page (``a2a.*``), attribute for
attribute where one exists; this app's own under ``toolnexus.*``.

Plain strings, no OpenTelemetry import: the wire and the runs name what they
report without paying for the library when tracing is off.
"""

from __future__ import annotations

# -- GenAI (open-telemetry/semantic-conventions-genai) --------------------------------
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
ERROR_TYPE = "error.type"

# -- A2A (the GenAI conventions' A2A page) -----------------------------------------------
TASK_ID = "a2a.task.id"
TASK_STATE = "a2a.task.state"

# -- general ---------------------------------------------------------------------------
USER_ID = "user.id"  # the Task's owner (a user's pk, or "anonymous")
RPC_METHOD = "rpc.method"  # the method as the caller named it ("message/send")

# -- this app's own ---------------------------------------------------------------------
DIALECT = "toolnexus.a2a.dialect"  # toolnexus | 0.3 | 1.0
BINDING = "toolnexus.a2a.binding"  # jsonrpc | http+json | grpc | mcp
ATTEMPT = "toolnexus.run.attempt"  # runs started for the Task, this one included
RESUMED = "toolnexus.run.resumed"  # a resume after an answer
TOOL_WAITING = "toolnexus.tool.waiting"  # the call stopped the run to wait for a person
DECISION = "toolnexus.review.decision"  # approve | decline | reply | message | expire ...
DECISION_ROLE = "toolnexus.review.role"  # reviewer | requester | system
PUSH_OUTCOME = "toolnexus.push.outcome"  # delivered | retry | failed | refused ...
LINK_KIND = "toolnexus.link"  # on a link: what the linked span was ("answer")

#: The wire's operations (``serving.handler.METHODS``' keys) -> A2A v1.0 names:
#: a request span is named after the operation whatever the dialect.
OPERATIONS = {
    "send": "SendMessage",
    "stream": "SendStreamingMessage",
    "get": "GetTask",
    "list": "ListTasks",
    "cancel": "CancelTask",
    "subscribe": "SubscribeToTask",
    "push-set": "CreateTaskPushNotificationConfig",
    "push-get": "GetTaskPushNotificationConfig",
    "push-list": "ListTaskPushNotificationConfigs",
    "push-delete": "DeleteTaskPushNotificationConfig",
    "extended-card": "GetExtendedAgentCard",
}


def task_state(state: str | None) -> str | None:
    """A Task's state as the A2A page records it: ``TASK_STATE_*`` (the v1.0
    enum), whichever dialect's spelling comes in."""
    if not state:
        return None
    if state.startswith("TASK_STATE_"):
        return state
    return "TASK_STATE_" + state.upper().replace("-", "_")
