"""Native tools the MCP tests serve: one that waits (for a timeout) and one
that holds until the test opens its gate (for the concurrency bound)."""

from __future__ import annotations

import asyncio
import threading

import toolnexus
from toolnexus import ToolResult

#: Opened by a test to let ``gated`` calls finish.
GATE = threading.Event()


async def _snooze(seconds: float) -> str:
    """Waits ``seconds``, then says so."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}s"


async def _gated() -> str:
    """Holds until the test opens the gate (at most 20 s)."""
    opened = await asyncio.to_thread(GATE.wait, 20)
    return "through the gate" if opened else "the gate stayed shut"


def _broken(reason: str) -> ToolResult:
    """Always fails."""
    return ToolResult(output=f"broken: {reason}", is_error=True)


snooze = toolnexus.tool(name="snooze")(_snooze)
gated = toolnexus.tool(name="gated")(_gated)
broken = toolnexus.tool(name="broken")(_broken)

PATHS = ["tests.mcp_tools.snooze", "tests.mcp_tools.gated", "tests.mcp_tools.broken"]
