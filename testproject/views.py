"""The demo's front page: where to go from ``/`` (the admin, its review
queue, the Agent Card, the A2A endpoint). A page of the demo project, not of
the app: a project decides what its own root shows."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.template import Context, Template
from django.urls import reverse

PAGE = Template(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ name }}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 42em; margin: 3em auto; padding: 0 1em; }
  code { background: #f3f3f3; padding: 0 .3em; }
</style></head>
<body>
<h1>{{ name }}</h1>
<p>{{ description }}</p>
<ul>
  <li><a id="admin" href="{{ admin }}">The admin</a>: sign in, then
      <a id="queue" href="{{ queue }}">Awaiting a human</a> holds what waits for a reviewer.</li>
  <li><a id="card" href="{{ card }}">The Agent Card</a>: what A2A clients read first.</li>
  <li>The A2A endpoint: <code id="endpoint">{{ endpoint }}</code> (JSON-RPC over POST).</li>
</ul>
<p>No account yet? <code>python manage.py createsuperuser</code></p>
</body></html>
"""
)


def home(request: HttpRequest) -> HttpResponse:
    agent = settings.TOOLNEXUS.get("AGENT") or {}
    context = {
        "name": agent.get("name") or "toolnexus-django demo",
        "description": agent.get("description") or "",
        "admin": reverse("admin:index"),
        "queue": reverse("admin:toolnexus_django_awaitinghumantask_changelist"),
        "card": reverse("toolnexus_django:agent-card"),
        "endpoint": request.build_absolute_uri(reverse("toolnexus_django:rpc")),
    }
    return HttpResponse(PAGE.render(Context(context)))
