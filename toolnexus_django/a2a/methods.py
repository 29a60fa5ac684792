"""The JSON-RPC methods behind the endpoint, independent of HTTP and DRF.

:func:`dispatch` answers one request with its result, an :class:`EventStream`
(the streaming methods, sent as Server-Sent Events by the edge), or raises
:class:`~toolnexus_django.a2a.jsonrpc.RpcError`. The wire reads Tasks
through the store it is handed; what changes a Task (starting one, answering
one, canceling one) it asks of the :class:`Actions` the edge hands it (the
serving edge's request handler calls each operation: ``serving.handler``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .. import lifecycle
from ..lifecycle import states
from ..lifecycle.messages import has_answer, message_text
from ..observability.logs import about_task, note_task
from ..stores import TaskStore
from ..stores.base import Task, state_of
from . import follow, listing, pushops
from .dialects import Dialect, render_task, resolve
from .eventstream import EventStream as EventStream
from .jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    TASK_NOT_CANCELABLE,
    UNSUPPORTED_OPERATION,
    RpcError,
    RpcRequest,
)
from .mediatypes import check_media_types, check_output_modes
from .params import (
    blocking_asked,
    check_id_field,
    check_parts,
    check_required,
    configuration_of,
    history_length_of,
    message_from_v1,
    own_task,
    push_config_of,
    read_query,
    read_task_id,
)
from .protojson import NESTING, json_names
from .pushconfig import PushConfigs


class Actions(Protocol):
    """What the wire may ask to change (the serving edge supplies these)."""

    def start(
        self, message: dict[str, Any], *, owner: str | None, text: str, streamed: bool
    ) -> Task:
        """A new Task for ``message``, saved and scheduled; as saved
        (``streamed``: by a streaming method, so its runs stream)."""

    def answer(self, task: Task, message: dict[str, Any], *, owner: str | None) -> Task:
        """Answer the waiting ``task`` with ``message`` as its requester;
        raises ``lifecycle.AnswerRefused``."""

    def cancel(self, task_id: str, *, owner: str | None) -> Task:
        """Cancel; raises ``lifecycle.IllegalMove`` when it is terminal."""

    def push_configs(self) -> PushConfigs | None:
        """Where push notification configs live; None: this store has none."""


class Envelope(Protocol):
    """How a binding carries results and errors (``jsonrpc.RpcEnvelope``,
    ``rest.RestEnvelope``)."""

    def result(self, result: Any) -> Any:
        """The message carrying ``result``."""

    def error(self, err: RpcError) -> Any:
        """The message carrying ``err``."""


@dataclass(frozen=True)
class CallContext:
    """Who is calling, through which store, and what may change Tasks."""

    store: TaskStore
    actions: Actions
    owner: str | None = None
    a2a_version: str | None = None
    #: The ``Last-Event-ID`` of a stream's reconnect.
    last_event_id: str | None = None
    #: Where each waiting request holds a thread (WSGI): the bound on them
    #: (MAX_HELD_REQUESTS); None where waiting costs no thread (ASGI).
    held: follow.HeldRequests | None = None
    #: The extended Agent Card for this caller (``EXTENDED_AGENT_CARD``), or
    #: None where the caller gets none (unauthenticated, or switched off).
    extended_card: Callable[[], dict[str, Any]] | None = None
    #: Which binding carried the call: jsonrpc | http+json | grpc (traces).
    binding: str = "jsonrpc"
    #: The caller's headers (or gRPC metadata) a ``traceparent`` is read from
    #: when TRACING is on; None when off.
    trace_headers: Mapping[str, str] | None = None


@dataclass
class Awaiting:
    """A blocking send: wait (:func:`follow.wait_settled` from a thread,
    :func:`follow.await_settled` from a coroutine) until ``task`` is terminal
    or waits on a person, then :meth:`result`. ``close()`` frees the slot."""

    store: TaskStore
    task: Task
    dialect: Dialect
    history_length: int | None = None
    slot: follow.Slot | None = field(default=None, repr=False)

    def result(self, task: Task) -> Any:
        return _send_result(task, self.dialect, self.history_length)

    def close(self) -> None:
        if self.slot is not None:
            self.slot.release()


#: One operation: (its checked params, the call's context, the dialect) -> result.
Operation = Callable[[dict[str, Any], CallContext, Dialect], Any]


def dispatch(
    request: RpcRequest,
    ctx: CallContext,
    operation_of: Callable[[str], Operation] | None = None,
) -> Any:
    """Run one request; returns its result or an :class:`EventStream`, or
    raises :class:`RpcError` (v1.0 errors carry typed details in ``data``).
    ``operation_of`` finds an operation by its name (``"get"``, ``"send"``,
    ...): the serving edge's request handler; by default, :data:`OPERATIONS`."""
    dialect, operation = resolve(request.method, ctx.a2a_version)
    run = (operation_of or OPERATIONS.__getitem__)(operation)
    try:
        params = request.params
        if params is None and operation == "extended-card":
            params = {}
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: expected an object")
        # v1.0 names a field by its proto name too; a flat request without
        # one ("_" in no key: every GetTask in camelCase) has nothing to read.
        if dialect is Dialect.V10 and (operation in NESTING or any("_" in k for k in params)):
            params = json_names(operation, params)
        # Every query parameter is checked before anything is looked up; the
        # log lines name the Task once it is known (note_task), this request only.
        with about_task(""):
            return run(read_query(operation, params), ctx, dialect)
    except RpcError as err:
        if dialect is Dialect.V10:
            err.details = True
        raise


# -- helpers -------------------------------------------------------------------------


def _own_task(ctx: CallContext, task_id: str) -> dict[str, Any]:
    task = own_task(ctx.store, ctx.owner, task_id)
    note_task(task_id)
    return task


def _busy() -> RpcError:
    return RpcError(
        INTERNAL_ERROR,
        "Server busy: too many open streams and blocking sends in this process; "
        "retry later, or send without waiting and poll the Task",
        data={"reason": "TOO_MANY_HELD_REQUESTS"},
    )


# -- SendMessage / message/send / SendStreamingMessage / message/stream ---------------


def send_message(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    return _send(params, ctx, dialect, streaming=False)


def stream_message(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    return _send(params, ctx, dialect, streaming=True)


def _send(params: dict[str, Any], ctx: CallContext, dialect: Dialect, *, streaming: bool) -> Any:
    message = params.get("message")
    if not isinstance(message, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: params.message must be an object")
    check_required(message, dialect)
    given = message.get("parts")
    if dialect is Dialect.V10:
        message = message_from_v1(message)
    check_parts(message.get("parts"))
    check_media_types(given)  # as given (a list, checked): a v1.0 part states its mediaType
    for key in ("contextId", "taskId", "messageId"):
        check_id_field(message, key)
    configuration = configuration_of(params)
    check_output_modes(configuration)
    history_length = history_length_of(configuration.get("historyLength"))
    blocking = not streaming and blocking_asked(configuration, dialect)
    inline = push_config_of(configuration, dialect)
    # Checked before anything is saved.
    push = pushops.inline_spec(inline, ctx, dialect) if inline is not None else None

    # Where a waiting request holds a server thread, take a slot before
    # anything is saved, so a refusal leaves no Task behind.
    waits = streaming or blocking
    slot = _hold(ctx) if waits else None
    if waits and slot is None and ctx.held is not None:
        if streaming:
            raise _busy()
        waits = False  # a blocking send without a slot returns at once
    try:
        if message.get("taskId") is not None:
            task = continue_task(message, ctx)
        else:
            task = start_task(message, ctx, streamed=streaming)
        if push is not None:
            # A new Task's notifications start after its submission (its run
            # may already be going); a continued Task's after its answer.
            pushops.attach(task, push, ctx, dialect, new=message.get("taskId") is None)
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    if streaming:
        return EventStream(ctx.store, task, dialect, history_length, slot=slot)
    if waits:
        return Awaiting(ctx.store, task, dialect, history_length, slot=slot)
    return _send_result(task, dialect, history_length)


def _hold(ctx: CallContext) -> follow.Slot | None:
    return ctx.held.hold() if ctx.held is not None else None


def _send_result(task: Task, dialect: Dialect, history_length: int | None) -> Any:
    rendered = render_task(task, dialect, history_length=history_length)
    return {"task": rendered} if dialect is Dialect.V10 else rendered


def start_task(message: dict[str, Any], ctx: CallContext, *, streamed: bool = False) -> Task:
    """A new ``submitted`` Task for ``message``, saved and scheduled; returned
    as saved (not re-read: a fast worker may already have moved it)."""
    text = message_text(message)
    if not text.strip():
        raise RpcError(INVALID_PARAMS, "Invalid params: the message has no text part")
    task = ctx.actions.start(message, owner=ctx.owner, text=text, streamed=streamed)
    note_task(task["id"])
    return task


def continue_task(message: dict[str, Any], ctx: CallContext) -> Task:
    """A message carrying the taskId of a Task waiting on input answers it
    (ok=True, as its requester) and its run resumes. Returns the Task as
    saved (``working``)."""
    task_id = message["taskId"]
    task = _own_task(ctx, task_id)
    context_id = message.get("contextId")
    if context_id is not None and context_id != task.get("contextId"):
        raise RpcError(
            INVALID_PARAMS, "Invalid params: contextId does not match the task's contextId"
        )
    state = state_of(task)
    if state in states.TERMINAL:
        raise RpcError(
            UNSUPPORTED_OPERATION, f"Task {task_id[:100]} is {state}: it cannot be continued"
        )
    if lifecycle.phase_of(task) != states.WAITING:
        raise RpcError(
            UNSUPPORTED_OPERATION, f"Task {task_id[:100]} is {state}, not waiting for input"
        )
    if not has_answer(message):
        raise RpcError(INVALID_PARAMS, "Invalid params: the message carries no answer")
    try:
        return ctx.actions.answer(task, message, owner=ctx.owner)
    except lifecycle.AnswerRefused as refused:
        if refused.reason == "invalid":
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: {refused}",
                data={"violations": refused.violations},
            ) from None
        if refused.reason == "not-allowed":
            raise RpcError(
                UNSUPPORTED_OPERATION,
                f"Task {task_id[:100]} cannot be answered by a message: {refused}",
                data={"reason": "ANSWER_NOT_ALLOWED"},
            ) from None
        raise RpcError(UNSUPPORTED_OPERATION, str(refused)) from None


# -- GetTask / tasks/get ---------------------------------------------------------------


def get_task(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    task_id = read_task_id(params)
    history_length = history_length_of(params.get("historyLength"))
    task = _own_task(ctx, task_id)
    return render_task(task, dialect, history_length=history_length)


# -- ListTasks ---------------------------------------------------------------------------


def list_tasks(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    return listing.list_tasks(ctx.store, params, ctx.owner, dialect)


# -- CancelTask / tasks/cancel -------------------------------------------------------------


def cancel(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    task_id = read_task_id(params)
    _own_task(ctx, task_id)
    try:
        canceled = ctx.actions.cancel(task_id, owner=ctx.owner)
    except lifecycle.IllegalMove as refused:
        raise RpcError(
            TASK_NOT_CANCELABLE,
            f"Task {task_id[:100]} is {refused.state}: it can no longer be canceled",
        ) from None
    return render_task(canceled, dialect)


# -- SubscribeToTask / tasks/resubscribe ---------------------------------------------------


def subscribe(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    """Follow a Task. With ``Last-Event-ID`` (a reconnect): exactly the
    messages after it, replayed even if the Task has finished since, then the
    live ones. Without: the Task, then its moves (a terminal Task: -32004)."""
    task_id = read_task_id(params)
    task = _own_task(ctx, task_id)
    after = follow.position_of(ctx.last_event_id)
    state = state_of(task)
    if after is None and state in states.TERMINAL:
        raise RpcError(
            UNSUPPORTED_OPERATION,
            f"Task {task_id[:100]} is {state}: there is nothing to subscribe to",
        )
    slot = _hold(ctx)
    if slot is None and ctx.held is not None:
        raise _busy()
    return EventStream(ctx.store, task, dialect, after=after, slot=slot)


# -- GetExtendedAgentCard / agent/getAuthenticatedExtendedCard ------------------------------


def extended_card(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    if ctx.extended_card is None:
        # v1.0 §3.3.4: a card that does not declare capabilities.extendedAgentCard
        # (EXTENDED_AGENT_CARD is None, or nobody can authenticate) -> unsupported.
        raise RpcError(
            UNSUPPORTED_OPERATION,
            "This agent offers no extended Agent Card (its card does not declare "
            "capabilities.extendedAgentCard)",
        )
    return ctx.extended_card()


OPERATIONS: dict[str, Operation] = {
    "send": send_message,
    "stream": stream_message,
    "get": get_task,
    "list": list_tasks,
    "cancel": cancel,
    "subscribe": subscribe,
    **pushops.OPERATIONS,
    "extended-card": extended_card,
}
