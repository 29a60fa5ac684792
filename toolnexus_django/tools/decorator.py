"""``@toolnexus_django.tool``: a toolnexus native tool that knows Django.

It is ``toolnexus.tool`` (the same schema from type hints, the same
description from the docstring, the same ``ToolResult`` conventions; what it
returns goes in ``TOOLNEXUS["TOOLKIT"]["tools"]`` like any tool), plus:

* ``permission=`` — Django permissions the Task's owner must hold: the model
  is not offered the tool on other owners' runs, and a call made anyway is
  refused without running the body;
* ``atomic=`` — the body's database work in one ``transaction.atomic()``: an
  exception leaves nothing written (and is reported to the model as a tool
  error, as toolnexus reports any); the call's result is recorded in the
  same transaction, so a replay of the call after a crash returns it instead
  of running the body again (:mod:`.outcomes`: exactly once);
* ``approval=`` — the body runs only after a person approves the call
  (:mod:`.approval`);
* every call within the process's connection budget (:mod:`.budget`), with
  :func:`~toolnexus_django.current_run` telling it whose run it is.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any, overload

import toolnexus
from toolnexus import Tool, ToolContext, ToolResult

from .approval import Approval, refused
from .budget import in_tool_thread, within_connection_budget
from .context import RunContext, answered_call, current_run
from .offered import refusal_text
from .outcomes import atomically


@dataclasses.dataclass
class DjangoTool(Tool):
    """A toolnexus ``Tool`` made by :func:`tool`, with what it was declared with."""

    #: Django permissions (``"app.codename"``) the run's owner must hold.
    permissions: tuple[str, ...] = ()
    #: The database alias whose transaction wraps the body, or None.
    atomic: str | None = None
    #: What a person must approve before the body runs, or None.
    approval: Approval | None = None
    #: The decorated function itself (call it directly in a unit test).
    func: Callable[..., Any] | None = dataclasses.field(default=None, repr=False)


@overload
def tool(fn: Callable[..., Any], /) -> DjangoTool: ...
@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    permission: str | Sequence[str] | None = None,
    atomic: bool | str = False,
    approval: str | Mapping[str, Any] | Approval | None = None,
) -> Callable[[Callable[..., Any]], DjangoTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    permission: str | Sequence[str] | None = None,
    atomic: bool | str = False,
    approval: str | Mapping[str, Any] | Approval | None = None,
) -> DjangoTool | Callable[[Callable[..., Any]], DjangoTool]:
    """Turn a function (``def`` or ``async def``) into a toolnexus native tool
    that acts on the project's data as the person who asked.

    Bare (``@tool``) or with options::

        @toolnexus_django.tool(
            permission="shop.refund_order",
            atomic=True,
            approval="Refund {amount} on order {order_id}?",
        )
        def refund(order_id: int, amount: float) -> str:
            \"\"\"Refund part of an order.\"\"\"
            order = Order.objects.select_for_update().get(pk=order_id)
            ...
    """

    def make(f: Callable[..., Any]) -> DjangoTool:
        return _make(
            f,
            name=name,
            description=description,
            input_schema=input_schema,
            permissions=_permissions(permission),
            alias=_alias(atomic),
            approval=None if approval is None else Approval.of(approval),
        )

    return make(fn) if fn is not None else make


def _permissions(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    names = (value,) if isinstance(value, str) else tuple(value)
    for perm in names:
        if not isinstance(perm, str) or perm.count(".") != 1 or perm.startswith("."):
            raise TypeError(f'permission= takes "app_label.codename" names, not {perm!r}')
    return names


def _alias(atomic: bool | str) -> str | None:
    if atomic is True:
        return "default"
    if atomic is False or atomic is None:
        return None
    if isinstance(atomic, str) and atomic:
        return atomic
    raise TypeError(f"atomic= takes True, False or a database alias, not {atomic!r}")


def _parameters(fn: Callable[..., Any]) -> set[str]:
    return {p for p in inspect.signature(fn).parameters if p not in ("ctx", "context")}


def _make(
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    input_schema: dict[str, Any] | None,
    permissions: tuple[str, ...],
    alias: str | None,
    approval: Approval | None,
) -> DjangoTool:
    is_async = inspect.iscoroutinefunction(fn)
    if alias is not None and is_async:
        raise TypeError(
            f"{fn.__name__}: atomic= needs a plain def. Django runs a transaction on one "
            "thread, and an async def's queries each go to a thread of their own: make the "
            "tool a def, or put its writes in one sync function under transaction.atomic() "
            "called with sync_to_async."
        )
    if approval is not None:
        approval.check_prompt(_parameters(fn))
    # toolnexus builds the tool (schema, description, argument passing, a
    # raised exception as an error result); a sync body goes to a tool thread
    # here rather than to toolnexus's asyncio.to_thread, so it is framed by
    # the connection budget however the toolkit is run.
    body: Callable[..., Any] = fn if is_async else _on_tool_thread(fn, alias)
    inner: Tool = toolnexus.tool(name=name, description=description, input_schema=input_schema)(
        body
    )
    tool_name = inner.name

    async def execute(args: dict[str, Any] | None = None, ctx: ToolContext | None = None) -> Any:
        arguments = dict(args or {})
        run = current_run()
        refusal = await _refusal(tool_name, permissions, run)
        if refusal is not None:
            return ToolResult(output=refusal, is_error=True)
        answer = ctx.answer if ctx is not None else None
        if approval is not None:
            if answer is None:
                return approval.request(tool_name, arguments)
            if not answer.ok:
                return refused(answer)
        # toolnexus's own wait_for path passes the answer only in ctx: make
        # it the call's context too (a durable resume has done so already).
        answered = answer is not None and run is not None and run.answer is None
        with answered_call(answer) if answered and answer is not None else nullcontext():
            return await within_connection_budget(lambda: inner.execute(arguments, ctx))

    return DjangoTool(
        name=tool_name,
        description=inner.description,
        input_schema=inner.input_schema,
        source=inner.source,
        execute=execute,
        permissions=permissions,
        atomic=alias,
        approval=approval,
        func=fn,
    )


def _on_tool_thread(fn: Callable[..., Any], alias: str | None) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def body(*args: Any, **kwargs: Any) -> Any:
        call = functools.partial(fn, *args, **kwargs)
        if alias is None:
            return await in_tool_thread(call)
        return await in_tool_thread(functools.partial(atomically, alias, call))

    return body


async def _refusal(name: str, permissions: tuple[str, ...], run: RunContext | None) -> str | None:
    """Why this call may not run (None: it may)."""
    if not permissions:
        return None
    if run is None:
        return (
            f"Refused: the tool {name!r} needs the permission {', '.join(permissions)}, and "
            "it was called outside any run, with no one to hold it. Nothing was done."
        )
    allowed = run.offers(name)
    if allowed is None:  # an MCP call, or a run that did not work it out
        allowed = await in_tool_thread(lambda: bool(run.owner.has_perms(permissions)))
    return None if allowed else refusal_text(name, permissions)


def budgeted(found: Tool) -> Tool:
    """A plain toolnexus native tool (``toolnexus.tool``) with its calls within
    the connection budget too (what it hands to ``asyncio.to_thread`` goes to
    the tool threads). Tools made by :func:`tool` already are; other sources
    (MCP servers, skills, builtins) never touch this process's database."""
    if isinstance(found, DjangoTool) or found.source != "native":
        return found
    inner = found.execute

    async def execute(args: dict[str, Any] | None = None, ctx: ToolContext | None = None) -> Any:
        return await within_connection_budget(lambda: inner(args, ctx))

    return dataclasses.replace(found, execute=execute)
