"""The push notification config methods, and configs given inline on a send.

=================================  ====================================  ===========
v0.3                               v1.0                                  operation
=================================  ====================================  ===========
tasks/pushNotificationConfig/set   CreateTaskPushNotificationConfig      push-set
tasks/pushNotificationConfig/get   GetTaskPushNotificationConfig         push-get
tasks/pushNotificationConfig/list  ListTaskPushNotificationConfigs       push-list
tasks/pushNotificationConfig/delete DeleteTaskPushNotificationConfig     push-delete
=================================  ====================================  ===========

Configs belong to their Task and are scoped as it is: another owner's Task,
and so its configs, answers -32001. A custom store (one without a place for
configs) answers -32003.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..stores.base import Task
from .dialects import Dialect
from .jsonrpc import INVALID_PARAMS, PUSH_NOTIFICATION_NOT_SUPPORTED, TASK_NOT_FOUND, RpcError
from .params import own_task
from .pushconfig import (
    PushConfigs,
    PushConfigSpec,
    PushURLRefused,
    parse_create,
    parse_ref,
    parse_spec,
    render,
)

if TYPE_CHECKING:
    from .methods import CallContext


def _configs(ctx: CallContext) -> PushConfigs:
    configs = ctx.actions.push_configs()
    if configs is None:
        raise RpcError(
            PUSH_NOTIFICATION_NOT_SUPPORTED,
            "Push notifications are not supported by this task store: "
            "the django, memory and file stores keep push configs",
        )
    return configs


def _dialect_name(dialect: Dialect) -> str:
    return dialect.value


def _refused(exc: Exception) -> RpcError:
    return RpcError(
        INVALID_PARAMS,
        f"Invalid params: the push notification URL is refused: {exc}",
        data={"reason": "PUSH_URL_REFUSED"},
    )


def _check(ctx: CallContext, spec: PushConfigSpec) -> None:
    try:
        _configs(ctx).check(spec)
    except PushURLRefused as refused:
        raise _refused(refused) from None


def _create(
    ctx: CallContext, task_id: str, spec: PushConfigSpec, dialect: Dialect, after: int
) -> Any:
    """Store a config whose URL was checked (:func:`_check`)."""
    try:
        return _configs(ctx).create(task_id, ctx.owner, spec, _dialect_name(dialect), after=after)
    except LookupError:  # the Task was deleted meanwhile (pruned)
        raise RpcError(TASK_NOT_FOUND, f"Task not found: {task_id[:100]}") from None
    except ValueError as limit:
        raise RpcError(INVALID_PARAMS, f"Invalid params: {limit}") from None


# -- on a send ---------------------------------------------------------------------------


def inline_spec(config: Any, ctx: CallContext, dialect: Dialect) -> PushConfigSpec:
    """The config a send carries inline (``params.push_config_of``), checked
    (URL included) before the Task is made."""
    spec = parse_spec(config, dialect)
    _check(ctx, spec)
    return spec


def attach(
    task: Task, spec: PushConfigSpec, ctx: CallContext, dialect: Dialect, *, new: bool
) -> None:
    """Store a send's inline config for ``task``: a new Task's notifications
    start after its submission (event 1), a continued one's from now on."""
    _create(ctx, str(task["id"]), spec, dialect, 1 if new else -1)


# -- the methods -------------------------------------------------------------------------


def push_set(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    _configs(ctx)  # a store without configs says so first
    task_id, spec = parse_create(params, dialect)
    own_task(ctx.store, ctx.owner, task_id)
    _check(ctx, spec)
    return render(_create(ctx, task_id, spec, dialect, -1), dialect)


def push_get(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    _configs(ctx)
    task_id, config_id = parse_ref(params, dialect, need_id=dialect is Dialect.V10)
    own_task(ctx.store, ctx.owner, task_id)
    found = _configs(ctx).get(task_id, config_id)
    if found is None:
        raise RpcError(TASK_NOT_FOUND, f"Push notification config not found: {config_id!s:.100}")
    return render(found, dialect)


def push_list(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    _configs(ctx)
    task_id, _ = parse_ref(params, dialect, need_id=False)
    own_task(ctx.store, ctx.owner, task_id)
    configs = [render(c, dialect) for c in _configs(ctx).list(task_id)]
    if dialect is Dialect.V10:
        return {"configs": configs, "nextPageToken": ""}
    return configs


def push_delete(params: dict[str, Any], ctx: CallContext, dialect: Dialect) -> Any:
    _configs(ctx)
    task_id, config_id = parse_ref(params, dialect, need_id=True)
    own_task(ctx.store, ctx.owner, task_id)
    # Idempotent (A2A v1.0 §3.1.10): a config already deleted, or never
    # made, of a Task the caller owns is deleted all the same.
    _configs(ctx).delete(task_id, str(config_id))
    return {} if dialect is Dialect.V10 else None


OPERATIONS: dict[str, Callable[[dict[str, Any], CallContext, Dialect], Any]] = {
    "push-set": push_set,
    "push-get": push_get,
    "push-list": push_list,
    "push-delete": push_delete,
}
