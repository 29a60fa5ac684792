"""Mount with ``path("agent/", include("toolnexus_django.urls"))``: the JSON-RPC
endpoint at ``agent/``, the HTTP+JSON binding's routes under it
(``agent/message:send``, ``agent/tasks/{id}``, ...), the card at
``agent/.well-known/agent-card.json``, and (with ``TOOLNEXUS["MCP"]``) the
toolkit as an MCP server at ``agent/mcp``. Every other path under ``agent/``
is the binding's too (its JSON 404, 405 or 400): list the include after any
of the project's own URLs that share its prefix.

Clients that know only the agent's origin look for its card at the origin's
root (RFC 8615, A2A's recommended location): add :func:`root_card` to the
project's own ``urlpatterns`` as well::

    urlpatterns = [
        root_card(),  # /.well-known/agent-card.json, describing the mount below
        path("agent/", include("toolnexus_django.urls")),
    ]

With two mounts (``include(..., namespace="billing")``), name the one the root
card describes: ``root_card("billing")``.
"""

from django.urls import URLPattern, path, re_path

from .card import AgentCardView
from .mcp import McpView
from .metrics import MetricsView
from .wsgi import JsonRpcView, JwksView, RestView

app_name = "toolnexus_django"

#: The HTTP+JSON binding's routes (A2A v1.0 §11), beside the JSON-RPC
#: endpoint: ``message:send``, ``tasks/{id}:cancel``, ... (a2a/rest.py).
REST_ROUTES = r"^(?P<route>(?:message:[A-Za-z]+|tasks(?:/.*)?|extendedAgentCard))$"
#: Every other path under the mount is the binding's too: what is no route
#: is its JSON 404 (405, 400), never Django's HTML page. (So mount the app
#: under its own prefix, or after the project's URLs.)
OTHER_PATHS = r"^(?P<route>[\s\S]+)$"

urlpatterns = [
    path(".well-known/agent-card.json", AgentCardView.as_view(), name="agent-card"),
    # The key set of signed push notifications.
    path(".well-known/jwks.json", JwksView.as_view(), name="jwks"),
    # The toolkit as an MCP server (404 unless TOOLNEXUS["MCP"]["tools"] is set).
    path("mcp", McpView.as_view(), name="mcp"),
    # Prometheus metrics (404 unless TOOLNEXUS["METRICS"] admits the caller).
    path("metrics", MetricsView.as_view(), name="metrics"),
    path("", JsonRpcView.as_view(), name="rpc"),
    re_path(REST_ROUTES, RestView.as_view(), name="rest"),
    re_path(OTHER_PATHS, RestView.as_view(), name="rest-other"),
]


def root_card(namespace: str = "toolnexus_django") -> URLPattern:
    """``/.well-known/agent-card.json`` for the project's URLconf: the card of
    the mount named ``namespace`` (its endpoint URL is wherever that mount
    really is)."""
    return path(
        ".well-known/agent-card.json",
        AgentCardView.as_view(describes=namespace),
        name="toolnexus-root-agent-card",
    )
