"""``<prefix>/metrics``: the Prometheus metrics (``TOOLNEXUS["METRICS"]``).

A Django view in the URLconf, so every edge serves it: WSGI, and the ASGI
application (``serving.asgi``), which hands what is not the agent's lean
endpoint to Django — its middleware then authenticates a session. Admitted:
``Authorization: Bearer <METRICS["TOKEN"]>`` (compared in constant time),
and logged-in users with ``METRICS["PERMISSION"]``. Anyone else — everyone,
with ``METRICS`` unset — gets the binding's own 404 for a path it does not
have: the URL does not exist for them.

The body is :func:`..observability.metrics.exposition`: the counters of every
process of the server, and (read here, at scrape time, with one query on the
partial index of waiting Tasks) the Requests waiting for a person.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import Count, Min
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views import View

from ..a2a.jsonrpc import RpcError
from ..a2a.rest import route
from ..conf import toolnexus_settings
from ..observability import metrics
from ..runtime import dbthreads
from ..stores import DjangoTaskStore, TaskStore, get_task_store
from ..stores.base import AWAITING_HUMAN_STATES
from .wsgi import rest_response


def may_read_metrics(request: HttpRequest) -> bool:
    """Whether ``request`` may read the metrics (see the module's docstring)."""
    setting = toolnexus_settings.METRICS
    if not isinstance(setting, dict) or not metrics.switched_on():
        return False
    token = setting.get("TOKEN")
    header = str(request.META.get("HTTP_AUTHORIZATION") or "")
    scheme, _, given = header.partition(" ")
    if isinstance(token, str) and token and scheme.lower() == "bearer":
        if hmac.compare_digest(given.strip().encode(), token.encode()):
            return True
    permission = setting.get("PERMISSION")
    user = getattr(request, "user", None)
    return bool(
        isinstance(permission, str)
        and user is not None
        and user.is_authenticated
        and user.has_perm(permission)
    )


def not_found() -> HttpResponse:
    """What the binding answers for a path it does not have."""
    try:
        route("GET", "metrics", {}, b"")
    except RpcError as err:
        err.details = True
        return rest_response(err)
    raise AssertionError("the binding has a route named metrics")  # pragma: no cover


class MetricsView(View):
    """``GET <prefix>/metrics``: Prometheus's text format, or 404."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not may_read_metrics(request):
            return not_found()
        if request.method not in ("GET", "HEAD"):
            return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
        sample_process()
        body, content_type = metrics.exposition([WaitingRequests()])
        response = HttpResponse(body, content_type=content_type)
        response["Cache-Control"] = "no-store"
        return response


def sample_process() -> dict[str, Any]:
    """Set this process's sampled gauges (each sweep, each scrape): the work
    waiting for a database thread."""
    if metrics.switched_on():
        pool = dbthreads.pool.peek()
        metrics.database_queue(pool.waiting if pool is not None else 0)
    return {}


class WaitingRequests:
    """A collector: Requests waiting for a person, and how long the oldest has
    waited, read from the store when scraped (right across processes and
    machines)."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        count, oldest = waiting_requests(get_task_store())
        age = max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0
        yield GaugeMetricFamily(
            "toolnexus_requests_waiting", "Requests waiting for a person.", value=count
        )
        yield GaugeMetricFamily(
            "toolnexus_request_oldest_wait_seconds",
            "How long the longest-waiting Request has waited (since its Task's last move).",
            value=age,
        )


def waiting_requests(store: TaskStore) -> tuple[int, datetime | None]:
    """(how many Tasks wait for a person, when the longest-waiting one last moved)."""
    if isinstance(store, DjangoTaskStore):
        from ..models import TaskRecord

        found = (
            TaskRecord.objects.using(store.using)
            .filter(state__in=sorted(AWAITING_HUMAN_STATES))
            .aggregate(n=Count("pk"), oldest=Min("updated_at"))
        )
        return int(found["n"] or 0), found["oldest"]
    stamps = []
    for task_id in store.waiting_ids():
        task = store.get(task_id)
        stamp = ((task or {}).get("status") or {}).get("timestamp")
        if stamp:
            stamps.append(datetime.fromisoformat(str(stamp).replace("Z", "+00:00")))
    return len(stamps), min(stamps, default=None)
