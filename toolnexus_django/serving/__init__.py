"""The HTTP edge: every binding (JSON-RPC, HTTP+JSON, MCP) over ASGI, and
the DRF views that serve the same over WSGI."""
