"""Checking and reading the parameters the methods share."""

from __future__ import annotations

from typing import Any

from .. import lifecycle
from ..stores import TaskStore
from ..stores.base import Task
from .dialects import Dialect
from .jsonrpc import INVALID_PARAMS, TASK_NOT_FOUND, RpcError


def history_length_of(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.isdigit():  # protobuf JSON may quote ints
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RpcError(INVALID_PARAMS, "Invalid params: historyLength must be a whole number >= 0")
    return value


def task_id_of(params: dict[str, Any]) -> str:
    task_id = params.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise RpcError(INVALID_PARAMS, "Invalid params: params.id must be a non-empty string")
    return task_id


#: The longest contextId, taskId or messageId a message may carry.
MAX_ID_CHARS = 255


def check_id_field(message: dict[str, Any], key: str) -> None:
    """A message's id fields are strings of at most MAX_ID_CHARS with no NUL
    (no database can index one), the same on every store."""
    value = message.get(key)
    if value is None or (value == "" and key != "taskId"):  # "" is "not given" there
        return
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"Invalid params: message.{key} must be a non-empty string")
    if len(value) > MAX_ID_CHARS or "\x00" in value:
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: message.{key} must be at most {MAX_ID_CHARS} characters, without NUL",
        )


def configuration_of(params: dict[str, Any]) -> dict[str, Any]:
    configuration = params.get("configuration")
    if configuration is None:
        return {}
    if not isinstance(configuration, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: configuration must be an object")
    return configuration


def blocking_asked(configuration: dict[str, Any], dialect: Dialect) -> bool:
    """Whether a send waits for the Task to stop (terminal or waiting on a
    person). v0.3: ``blocking``, true
    when absent; v1.0: ``not returnImmediately`` (false when absent) — the
    official SDK's defaults. The toolnexus dialect always returns at once."""
    if dialect is Dialect.TOOLNEXUS:
        return False
    key, default = ("blocking", True) if dialect is Dialect.V03 else ("returnImmediately", False)
    value = configuration.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, bool):
        raise RpcError(INVALID_PARAMS, f"Invalid params: configuration.{key} must be a boolean")
    return value if dialect is Dialect.V03 else not value


def own_task(store: TaskStore, owner: str | None, task_id: str) -> Task:
    """The Task ``task_id`` if ``owner`` owns it, else -32001."""
    task = store.get(task_id)
    # Another owner's Task answers exactly like an unknown one: its existence
    # is not disclosed.
    if task is None or lifecycle.owner_of(task) != owner:
        raise RpcError(TASK_NOT_FOUND, f"Task not found: {task_id[:100]}")
    return task
