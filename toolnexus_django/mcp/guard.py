"""What stands between an MCP ``tools/call`` and the toolkit's tool.

:func:`guarded` wraps one toolnexus Tool: a per-call timeout
(``MCP["CALL_TIMEOUT"]``), and a tool that suspends — returns a toolnexus
pending Request — gives an ``isError`` result naming the Request (an MCP
call cannot wait for a person; see :func:`suspended_text`).

:func:`audit_calls` wraps the server's ``tools/call`` handler: it bounds the
calls in flight (:mod:`.limits`), answers an unknown tool with JSON-RPC
-32602, and records every call (:mod:`.audit`).

Works around toolnexus (0.21, with mcp 1.30): ``build_mcp_server`` raises
its "Unknown tool" ``McpError`` inside the SDK's ``call_tool`` decorator,
whose catch-all turns it into an ``isError`` result, not the -32602 SPEC §7C
says; and its ``on_call`` hook sees neither the caller nor the arguments.
So the handler the decorator registered (``Server.request_handlers``, the
SDK's table) is wrapped here, before it is reached; the tools, the result
mapping and the transport stay toolnexus's.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone
from mcp import types
from mcp.shared.exceptions import McpError
from toolnexus import Tool, ToolResult, pending_of

from .audit import Caller, CallRecord, digest
from .limits import calls_in_flight


@dataclass
class Note:
    """What a guarded tool tells the audit about one call."""

    reason: str = ""
    request_id: str = ""


#: The current call's :class:`Note` (set by the audit handler, in the task
#: that awaits the tool, so the guarded tool sees the same object).
_note: contextvars.ContextVar[Note | None] = contextvars.ContextVar("mcp_call_note", default=None)


def suspended_text(tool: str, request: Any) -> str:
    """The ``isError`` text of a tool that suspended during an MCP call."""
    text = (
        f"The tool {tool!r} needs a person: it made the toolnexus Request "
        f"{request.id!r} (kind {request.kind!r}, prompt {request.prompt!r}"
    )
    if request.url:
        text += f", url {request.url!r}"
    return text + (
        "). An MCP call cannot wait for a person's answer: ask this agent over "
        "A2A instead, where the Task waits for the answer (from the requester "
        "over A2A, or a reviewer in the admin) and the run then resumes."
    )


def guarded(tool: Tool, timeout: float | None) -> Tool:
    """``tool`` with a timeout, its suspension turned into an ``isError`` result."""

    async def execute(args: dict[str, Any], ctx: Any = None) -> ToolResult:
        note = _note.get()
        limit = asyncio.timeout(timeout)
        try:
            async with limit:
                result: ToolResult = await tool.execute(args)
        except TimeoutError:
            if not limit.expired():
                raise  # the tool's own TimeoutError: an error like any other
            if note is not None:
                note.reason = "timeout"
            return ToolResult(
                output=f"The tool {tool.name!r} took longer than {timeout}s "
                '(TOOLNEXUS["MCP"]["CALL_TIMEOUT"]) and was stopped.',
                is_error=True,
            )
        request = pending_of(result)
        if request is None:
            return result
        if note is not None:
            note.reason, note.request_id = "pending", str(request.id)
        return ToolResult(output=suspended_text(tool.name, request), is_error=True)

    return Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        source=tool.source,
        execute=execute,
    )


Handler = Callable[[Any], Awaitable[Any]]


def _error_result(text: str) -> types.ServerResult:
    return types.ServerResult(
        types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True)
    )


def audit_calls(
    server: Any,
    known: set[str],
    caller: Caller,
    calls: list[CallRecord],
    max_in_flight: int | None,
) -> None:
    """Wrap ``server``'s ``tools/call`` handler: -32602 for a tool not in
    ``known``, "busy" past ``max_in_flight``, one :class:`CallRecord` per call
    appended to ``calls``."""
    inner: Handler = server.request_handlers[types.CallToolRequest]

    async def handler(req: types.CallToolRequest) -> types.ServerResult:
        name = req.params.name
        arguments = req.params.arguments or {}
        at, started = timezone.now(), time.monotonic()

        def record(outcome: str, reason: str = "", request_id: str = "") -> None:
            calls.append(
                CallRecord(
                    at=at,
                    caller=caller.id,
                    caller_name=caller.name,
                    tool=name,
                    arguments_digest=digest(arguments),
                    duration_ms=(time.monotonic() - started) * 1000.0,
                    outcome=outcome,
                    reason=reason,
                    request_id=request_id,
                )
            )

        if name not in known:
            record("error", "unknown-tool")
            raise McpError(
                types.ErrorData(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")
            )
        if not calls_in_flight.take(max_in_flight):
            record("error", "busy")
            return _error_result(
                f"The server is busy ({max_in_flight} MCP calls in flight in this "
                "process); try again shortly."
            )
        note = Note()
        token = _note.set(note)
        try:
            result = await inner(req)
        except BaseException:
            record("error", "internal")
            raise
        finally:
            _note.reset(token)
            calls_in_flight.give_back()
        is_error = bool(getattr(result.root, "isError", False))
        reason = note.reason or ("tool-error" if is_error else "")
        record("error" if is_error else "ok", reason, note.request_id)
        return result

    server.request_handlers[types.CallToolRequest] = handler
