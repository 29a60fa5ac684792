"""Mount with ``path("agent/", include("toolnexus_django.urls"))``."""

from django.urls import path

from .views import AgentCardView, JsonRpcView

app_name = "toolnexus_django"

urlpatterns = [
    path(".well-known/agent-card.json", AgentCardView.as_view(), name="agent-card"),
    path("", JsonRpcView.as_view(), name="rpc"),
]
