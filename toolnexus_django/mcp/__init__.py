"""The toolkit as an MCP server at ``<prefix>/mcp`` (streamable HTTP, stateless).

Off unless ``TOOLNEXUS["MCP"]["tools"]`` names the tools it exposes. Each
request gets a fresh toolnexus MCP server (``toolnexus.build_mcp_server``)
and transport (``toolnexus.mcp_serve.serve_mcp_http_request``) on the
process's agent runtime loop, where the toolkit lives (:mod:`.exchange`);
the tools it serves are guarded (:mod:`.guard`: a per-call timeout, a
suspended tool becomes an ``isError`` result); every ``tools/call`` is
recorded (:mod:`.audit`); calls in flight per process are bounded
(:mod:`.limits`). Its HTTP binding — reading the body, DRF authentication,
the ASGI endpoint and the DRF view — is the serving edge's
(:mod:`toolnexus_django.serving.mcp`); settings, :mod:`.config`.
"""

from .config import enabled

__all__ = ["enabled"]
