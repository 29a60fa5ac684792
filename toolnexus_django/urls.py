"""Mount with ``path("agent/", include("toolnexus_django.urls"))``.

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

from django.urls import URLPattern, path

from .views import AgentCardView, JsonRpcView

app_name = "toolnexus_django"

urlpatterns = [
    path(".well-known/agent-card.json", AgentCardView.as_view(), name="agent-card"),
    path("", JsonRpcView.as_view(), name="rpc"),
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
