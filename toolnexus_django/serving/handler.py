"""One request handler for every binding: a method per A2A operation.

JSON-RPC and HTTP+JSON (over ASGI and under WSGI) turn a request into an
``RpcRequest`` and call :meth:`RequestHandler.dispatch`; the wire
(``a2a.methods.dispatch``) resolves its dialect and operation, checks its
params, and calls the handler's ``on_*`` method for that operation. MCP
calls :meth:`RequestHandler.on_mcp_request`. Each method is the wire's own
operation, so what a request does is the same through every binding; the
edges only read, authenticate, render and stream.

A method returns the operation's result, an ``EventStream`` (the edge sends
it as Server-Sent Events, :mod:`.sse`) or an ``Awaiting`` (a blocking send:
the edge waits for the Task to settle, holding a thread under WSGI only).
What a request may change comes in with its context: :class:`EndpointActions`.
"""

from __future__ import annotations

import functools
from concurrent.futures import Future
from typing import Any

from toolnexus import Answer

from .. import lifecycle
from ..a2a import methods, pushops
from ..a2a.dialects import Dialect
from ..a2a.jsonrpc import RpcRequest
from ..a2a.methods import CallContext, Operation
from ..a2a.pushconfig import PushConfigs, keeps_configs
from ..fulfilment.jobs import schedule_fulfilment
from ..lifecycle.messages import answer_data, user_message
from ..mcp.exchange import Exchange, Reply, start_exchange
from ..observability import tracing
from ..observability.mcpspans import traced_mcp
from ..push.configs import DatabasePushConfigs, LocalPushConfigs
from ..review import NotCancelable, TaskNotFound, answer_task, cancel_task
from ..stores import DjangoTaskStore, DuplicateMessage, TaskStore
from ..stores.base import Task

Params = dict[str, Any]

#: The wire's operation names (``a2a.dialects.resolve``) -> the handler's methods.
METHODS = {
    "send": "on_send_message",
    "stream": "on_send_streaming_message",
    "get": "on_get_task",
    "list": "on_list_tasks",
    "cancel": "on_cancel_task",
    "subscribe": "on_subscribe_to_task",
    "push-set": "on_set_push_config",
    "push-get": "on_get_push_config",
    "push-list": "on_list_push_configs",
    "push-delete": "on_delete_push_config",
    "extended-card": "on_get_extended_agent_card",
}


class RequestHandler:
    """The A2A operations, one method each (the a2a-sdk server's shape)."""

    def __init__(self) -> None:
        self._wrappers: dict[str, tuple[Operation, Operation]] = {}

    def dispatch(self, request: RpcRequest, ctx: CallContext) -> Any:
        """Answer one JSON-RPC (or routed HTTP+JSON) request: its result,
        an ``EventStream`` or an ``Awaiting``; raises ``RpcError``."""
        return methods.dispatch(request, ctx, self.operation)

    def operation(self, name: str) -> Operation:
        method: Operation = getattr(self, METHODS[name])
        if tracing.recording():  # a SERVER span named after the operation
            return self._traced(name, method)
        return method

    def _traced(self, name: str, method: Operation) -> Operation:
        # One wrapper per operation (and method, which a test may replace),
        # made once: not a closure per request.
        made = self._wrappers.get(name)
        if made is None or made[0] != method:
            made = (method, tracing.traced_operation(name, method))
            self._wrappers[name] = made
        return made[1]

    def on_send_message(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """SendMessage / message/send (a blocking one: an ``Awaiting``)."""
        return methods.send_message(params, ctx, dialect)

    def on_send_streaming_message(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """SendStreamingMessage / message/stream: an ``EventStream``."""
        return methods.stream_message(params, ctx, dialect)

    def on_get_task(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """GetTask / tasks/get."""
        return methods.get_task(params, ctx, dialect)

    def on_list_tasks(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """ListTasks."""
        return methods.list_tasks(params, ctx, dialect)

    def on_cancel_task(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """CancelTask / tasks/cancel."""
        return methods.cancel(params, ctx, dialect)

    def on_subscribe_to_task(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """SubscribeToTask / tasks/resubscribe: an ``EventStream``."""
        return methods.subscribe(params, ctx, dialect)

    def on_set_push_config(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """CreateTaskPushNotificationConfig / tasks/pushNotificationConfig/set."""
        return pushops.push_set(params, ctx, dialect)

    def on_get_push_config(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """GetTaskPushNotificationConfig / tasks/pushNotificationConfig/get."""
        return pushops.push_get(params, ctx, dialect)

    def on_list_push_configs(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """ListTaskPushNotificationConfigs / tasks/pushNotificationConfig/list."""
        return pushops.push_list(params, ctx, dialect)

    def on_delete_push_config(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """DeleteTaskPushNotificationConfig / tasks/pushNotificationConfig/delete."""
        return pushops.push_delete(params, ctx, dialect)

    def on_get_extended_agent_card(self, params: Params, ctx: CallContext, dialect: Dialect) -> Any:
        """GetExtendedAgentCard / agent/getAuthenticatedExtendedCard."""
        return methods.extended_card(params, ctx, dialect)

    def on_mcp_request(self, exchange: Exchange) -> Future[Reply]:
        """One MCP request (streamable HTTP), answered by a fresh MCP server
        on the runtime's loop; the edge waits for the reply within its deadline."""
        if tracing.recording():
            start = functools.partial(start_exchange, exchange)
            return traced_mcp(exchange.headers, exchange.body, exchange.caller.id, start)
        return start_exchange(exchange)


#: The handler every binding dispatches to.
handler = RequestHandler()


class EndpointActions:
    """What the wire may change, for one request, through ``store``
    (``a2a.methods.Actions``): start a Task and schedule its run, answer one
    as its requester, cancel one, keep its push configs. The wire itself
    never imports ``review/`` or ``fulfilment/``."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store

    def start(
        self, message: dict[str, Any], *, owner: str | None, text: str, streamed: bool = False
    ) -> Task:
        try:
            submitted = lifecycle.submit(
                self.store, message, owner=owner, text=text, streamed=streamed
            )
            task = submitted.task
        except DuplicateMessage as repeat:
            # A retry of a send that already started a Task: that Task, no second run.
            existing = self.store.get(repeat.task_id)
            if existing is None:
                raise
            return existing
        schedule_fulfilment(task["id"], self.store, task)
        return task

    def answer(self, task: Task, message: dict[str, Any], *, owner: str | None) -> Task:
        pending = lifecycle.read(task).pending or {}
        return answer_task(
            task["id"],
            Answer(id=pending.get("id"), ok=True, data=answer_data(message)),
            decision="message",
            role="requester",
            actor=owner,
            via="a2a",
            message=user_message(message, task=task),
            store=self.store,
        )

    def push_configs(self) -> PushConfigs | None:
        if isinstance(self.store, DjangoTaskStore):
            return DatabasePushConfigs(self.store.using)
        return LocalPushConfigs(self.store) if keeps_configs(self.store) else None

    def cancel(self, task_id: str, *, owner: str | None) -> Task:
        try:
            return cancel_task(task_id, store=self.store, actor=owner, via="a2a")
        except (NotCancelable, TaskNotFound) as refused:
            state = getattr(refused, "state", "gone")
            raise lifecycle.IllegalMove("cancel", task_id, state, "done") from None
