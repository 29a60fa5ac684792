"""Reading ``TOOLNEXUS["MCP"]``: on or off, which tools (its DRF classes are
the edge's: ``serving.mcp``)."""

from __future__ import annotations

from typing import Any

from ..conf import toolnexus_settings

#: ``MCP["tools"]`` meaning every tool of the toolkit.
ALL = "__all__"
#: The ``WWW-Authenticate`` of a 401 when the first authentication class has
#: none of its own (SessionAuthentication): MCP's HTTP transport expects one.
FALLBACK_CHALLENGE = 'Bearer realm="mcp"'


def enabled() -> bool:
    """Whether the endpoint exists (``MCP["tools"]`` is set)."""
    return toolnexus_settings.MCP.get("tools") is not None


def wanted_names() -> list[str] | None:
    """The tool names to expose, or None for every tool of the toolkit."""
    tools = toolnexus_settings.MCP.get("tools")
    if tools is None or tools == ALL:
        return None
    return [str(name) for name in tools]


def serve_config() -> dict[str, Any]:
    """toolnexus's MCP serve profile (``MCPServeConfig``): name, version, tools."""
    cfg = toolnexus_settings.MCP
    agent = toolnexus_settings.AGENT if isinstance(toolnexus_settings.AGENT, dict) else {}
    return {
        "name": cfg.get("name") or agent.get("name") or "toolnexus-agent",
        "version": cfg.get("version") or agent.get("version") or "0.1.0",
        "tools": wanted_names(),
    }


def number(key: str) -> float:
    return float(toolnexus_settings.MCP[key])
