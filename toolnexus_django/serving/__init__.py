"""The HTTP edge: every binding (JSON-RPC, HTTP+JSON, MCP) over ASGI, and the
DRF views that serve the same under WSGI, on one request handler.

One request: read the body within its limits and authenticate and permit it
with the DRF classes (:mod:`.pipeline`; Django and DRF's views under WSGI),
parse or route it (``a2a.jsonrpc``, ``a2a.rest``; MCP as it comes), dispatch
it to :mod:`.handler` (an ``on_*`` method per A2A operation), render it in
the binding's words, a stream as Server-Sent Events (:mod:`.sse`). The
bindings: :mod:`.endpoint` (ASGI), :mod:`.wsgi` (DRF views), :mod:`.mcp`,
:mod:`.card`; the URLs, :mod:`.urls`.
"""
