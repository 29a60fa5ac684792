"""Reading ``TOOLNEXUS["MCP"]``: on or off, which tools, which DRF classes."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import AllowAny

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


def authentication_classes() -> list[Any]:
    """The endpoint's DRF authentication classes (None: the A2A endpoint's)."""
    from ..serving.wsgi import rpc_authentication_classes

    classes = toolnexus_settings.imported("MCP", "AUTHENTICATION_CLASSES")
    return rpc_authentication_classes() if classes is None else classes


def permission_classes() -> list[Any]:
    """The endpoint's DRF permission classes (None: the A2A endpoint's)."""
    from ..serving.wsgi import rpc_permission_classes

    classes = toolnexus_settings.imported("MCP", "PERMISSION_CLASSES")
    return rpc_permission_classes() if classes is None else classes


def needs_drf() -> bool:
    """Whether a request must go through DRF (any authentication, or a
    permission other than AllowAny); if not, every caller is anonymous."""
    return bool(authentication_classes()) or any(p is not AllowAny for p in permission_classes())


def number(key: str) -> float:
    return float(toolnexus_settings.MCP[key])
