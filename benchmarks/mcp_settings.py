"""Settings for ``benchmarks/mcp_calls.py``: the test project with an open
MCP endpoint serving one instant tool (``echo``). Open because the
benchmark measures the endpoint, not a password hash per request (the test
project's own MCP endpoint is behind HTTP Basic)."""

from __future__ import annotations

import os

import toolnexus

from testproject.settings import *  # noqa: F403
from testproject.settings import TOOLNEXUS


@toolnexus.tool(name="echo")
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


TOOLNEXUS = {
    **TOOLNEXUS,
    "TOOLKIT": {**TOOLNEXUS["TOOLKIT"], "tools": ["benchmarks.mcp_settings.echo"]},
    "MCP": {
        "tools": ["echo"],
        "AUTHENTICATION_CLASSES": [],
        "PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
        # MCP_BENCH_AUDIT=0: no McpCall rows (the signal only), to see their cost.
        "AUDIT": os.environ.get("MCP_BENCH_AUDIT", "1") != "0",
    },
}
