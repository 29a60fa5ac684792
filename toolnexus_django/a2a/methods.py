"""The JSON-RPC methods behind the endpoint, independent of HTTP and DRF."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..stores import TaskStore
from . import shapes
from .dialects import METHODS, Dialect, check_version, render_task
from .jsonrpc import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    TASK_NOT_FOUND,
    UNSUPPORTED_OPERATION,
    RpcError,
    RpcRequest,
)


@dataclass(frozen=True)
class CallContext:
    """Who is calling and through which store."""

    store: TaskStore
    owner: str | None = None
    a2a_version: str | None = None
    #: Called with a new Task's id once it is saved (enqueues its fulfilment).
    schedule: Callable[[str], None] | None = None


def dispatch(request: RpcRequest, ctx: CallContext) -> Any:
    """Run one request; returns its result or raises :class:`RpcError`."""
    check_version(ctx.a2a_version)
    entry = METHODS.get(request.method)
    if entry is None:
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {request.method[:100]}")
    dialect, operation = entry
    params = request.params
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: expected an object")
    if operation == "send":
        return send_message(params, ctx, dialect)
    return get_task(params, ctx, dialect)


def send_message(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    message = params.get("message")
    if not isinstance(message, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: params.message must be an object")
    if not isinstance(message.get("parts"), list):
        raise RpcError(INVALID_PARAMS, "Invalid params: params.message.parts must be an array")
    context_id = message.get("contextId")
    if context_id is not None and (not isinstance(context_id, str) or len(context_id) > 255):
        raise RpcError(INVALID_PARAMS, "Invalid params: contextId must be a string")
    if message.get("taskId") is not None:
        return continue_task(message, ctx, dialect)
    text = shapes.message_text(message)
    if not text.strip():
        raise RpcError(INVALID_PARAMS, "Invalid params: the message has no text part")
    task = shapes.new_task(message, text=text, owner=ctx.owner)
    ctx.store.save(task)
    if ctx.schedule is not None:
        ctx.schedule(task["id"])
    # The Task as saved, not re-read: a fast worker may already have moved it.
    return render_task(task, dialect)


def answer_data(message: dict[str, Any]) -> dict[str, Any]:
    """The Answer data a continuing message carries: its data parts merged,
    else its text as ``{"output": text}`` (toolnexus's ``answer_output`` key)."""
    data: dict[str, Any] = {}
    for part in message.get("parts") or ():
        if (
            isinstance(part, dict)
            and part.get("kind") == "data"
            and isinstance(part.get("data"), dict)
        ):
            data.update(part["data"])
    return data or {"output": shapes.message_text(message)}


def continue_task(message: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    """A message carrying the taskId of a Task waiting on input answers it
    (ok=True) and its run resumes."""
    from toolnexus import Answer

    from ..review import AnswerRefused, answer_task, pending_request

    task_id = message["taskId"]
    if not isinstance(task_id, str) or not task_id:
        raise RpcError(INVALID_PARAMS, "Invalid params: taskId must be a non-empty string")
    task = ctx.store.get(task_id)
    if task is None or shapes.owner_of(task) != ctx.owner:
        raise RpcError(TASK_NOT_FOUND, f"Task not found: {task_id[:100]}")
    context_id = message.get("contextId")
    if context_id is not None and context_id != task.get("contextId"):
        raise RpcError(
            INVALID_PARAMS, "Invalid params: contextId does not match the task's contextId"
        )
    state = shapes.state_of(task)
    pending = pending_request(task)
    if state in shapes.TERMINAL:
        raise RpcError(
            UNSUPPORTED_OPERATION, f"Task {task_id[:100]} is {state}: it cannot be continued"
        )
    if state not in shapes.AWAITING_HUMAN or pending is None:
        raise RpcError(
            UNSUPPORTED_OPERATION, f"Task {task_id[:100]} is {state}, not waiting for input"
        )
    if not shapes.message_text(message).strip() and answer_data(message) == {"output": ""}:
        raise RpcError(INVALID_PARAMS, "Invalid params: the message carries no answer")
    user_message = shapes.user_message(message, task=task)
    try:
        working = answer_task(
            task_id,
            Answer(id=pending["id"], ok=True, data=answer_data(message)),
            decision="message",
            actor=ctx.owner,
            via="a2a",
            message=user_message,
            store=ctx.store,
        )
    except AnswerRefused as refused:
        raise RpcError(UNSUPPORTED_OPERATION, str(refused)) from None
    return render_task(working, dialect)


def get_task(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    task_id = params.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise RpcError(INVALID_PARAMS, "Invalid params: params.id must be a non-empty string")
    history_length = params.get("historyLength")
    if history_length is not None and (
        not isinstance(history_length, int)
        or isinstance(history_length, bool)
        or history_length < 0
    ):
        raise RpcError(INVALID_PARAMS, "Invalid params: historyLength must be a whole number >= 0")
    task = ctx.store.get(task_id)
    # Another owner's Task answers exactly like an unknown one: its existence
    # is not disclosed.
    if task is None or shapes.owner_of(task) != ctx.owner:
        raise RpcError(TASK_NOT_FOUND, f"Task not found: {task_id[:100]}")
    return render_task(task, dialect, history_length=history_length)
