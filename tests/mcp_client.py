"""The official ``mcp`` client against the MCP endpoint: over real HTTP (a
``toolnexus_serve`` process) or in-process (the ASGI application through
httpx's ASGI transport: no server, no thread of its own)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

T = TypeVar("T")

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


def asgi_client(**kwargs: Any) -> httpx.AsyncClient:
    """An httpx client on the project's ASGI application (as toolnexus_serve runs it)."""
    from toolnexus_django.asgi import get_asgi_application

    transport = httpx.ASGITransport(app=get_asgi_application())
    return httpx.AsyncClient(transport=transport, base_url="http://testserver", **kwargs)


@asynccontextmanager
async def session(url: str, http: httpx.AsyncClient) -> AsyncIterator[ClientSession]:
    """An initialized MCP ClientSession on ``url`` through ``http``."""
    async with streamable_http_client(url, http_client=http) as (read, write, _):
        async with ClientSession(read, write) as client:
            await client.initialize()
            yield client


def run(scenario: Callable[[], Awaitable[T]], timeout: float = 60) -> T:
    """Run an async scenario to its end, within ``timeout`` seconds."""

    async def bounded() -> T:
        return await asyncio.wait_for(scenario(), timeout)

    return asyncio.run(bounded())


def digest(arguments: dict[str, Any]) -> str:
    """What the audit stores of the arguments (computed independently here)."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)
