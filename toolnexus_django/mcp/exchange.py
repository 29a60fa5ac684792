"""One HTTP exchange with the MCP server, on the agent runtime's loop.

As toolnexus's own ``Toolkit.serve`` does it (SPEC §7C): a fresh server
(``toolnexus.build_mcp_server``) and a fresh stateless streamable-HTTP
transport (``toolnexus.mcp_serve.serve_mcp_http_request``, the SDK's
``StreamableHTTPServerTransport`` in JSON-response mode) per request. It
runs on the runtime's loop because the toolkit's tools (an MCP source's
sessions above all) are bound to the loop that built them.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from typing import Any

from toolnexus import build_mcp_server, exposed_mcp_tools
from toolnexus.mcp_serve import serve_mcp_http_request

from ..agent.runtime import get_runtime
from ..conf import toolnexus_settings
from ..tools.context import new_run, running
from .audit import Caller, CallRecord
from .config import serve_config
from .guard import audit_calls, guarded

#: Seconds, past CALL_TIMEOUT, one exchange may take in all before it is
#: stopped (initialize and tools/list are quick; a call has its own timeout).
EXCHANGE_GRACE = 10.0


@dataclass
class Exchange:
    """An MCP HTTP request, read and authenticated."""

    method: str
    path: str
    headers: list[tuple[bytes, bytes]]
    body: bytes
    caller: Caller = field(default_factory=Caller)


@dataclass
class Reply:
    """The transport's answer, and the calls it made (for the audit)."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    calls: list[CallRecord] = field(default_factory=list)


def exposed(toolkit: Any) -> list[Any]:
    """The toolkit's tools the endpoint serves (``MCP["tools"]``)."""
    return list(exposed_mcp_tools(toolkit.tools(), serve_config()))


def deadline() -> float | None:
    """How long one exchange may take in all (None: for ever)."""
    timeout = toolnexus_settings.MCP.get("CALL_TIMEOUT")
    return None if timeout is None else float(timeout) + EXCHANGE_GRACE


async def serve_exchange(toolkit: Any, request: Exchange) -> Reply:
    """Answer ``request`` with a fresh toolnexus MCP server (call on the
    runtime's loop)."""
    cfg = toolnexus_settings.MCP
    timeout = cfg.get("CALL_TIMEOUT")
    limit = cfg.get("MAX_CONCURRENT_CALLS")
    tools = [guarded(t, None if timeout is None else float(timeout)) for t in exposed(toolkit)]
    serve_cfg = serve_config()
    server = build_mcp_server(tools, {k: v for k, v in serve_cfg.items() if k != "tools"})
    calls: list[CallRecord] = []
    audit_calls(
        server,
        {t.name for t in tools},
        request.caller,
        calls,
        None if limit is None else int(limit),
    )
    # A tool's current_run() names the caller as its owner (no Task).
    caller = new_run(task_id=None, context_id=None, owner_id=request.caller.id or None, via="mcp")
    with running(caller):
        status, headers, body = await serve_mcp_http_request(
            server, request.method, request.path, request.headers, request.body
        )
    return Reply(int(status), list(headers), bytes(body), calls)


def start_exchange(request: Exchange) -> concurrent.futures.Future[Reply]:
    """Start :func:`serve_exchange` on this process's runtime (starting the
    runtime if need be: call where blocking is fine) and return its future."""
    runtime = get_runtime()
    return runtime.run_coroutine(serve_exchange(runtime.toolkit, request))
