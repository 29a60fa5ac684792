"""System checks of the ``TOOLNEXUS`` setting, registered here (the app's
``ready()`` imports this package).

``manage.py check`` (and every management command before it runs) reports a
misconfiguration with its own id — one id per problem (:mod:`.problems` lists
them all; docs/reference/checks.md explains each) — never as a traceback at
request time. One module per part of the setting:

================  ====================================================
toplevel.py       the dict's keys; the top-level settings of no section
store.py          ``STORE``, ``EVENT_LISTENER``
agent.py          ``AGENT``, ``TOOLKIT``, ``CLIENT``
limits.py         the numbers
review.py         ``REVIEW``
push.py           ``PUSH``
mcp.py            ``MCP``
grpc.py           ``GRPC``
observability.py  ``TRACING``
metrics.py        ``METRICS``
security.py       an endpoint open to anyone (the ``security`` tag)
================  ====================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, register

from ..conf import SETTING_NAME, merge
from .agent import check_agent
from .grpc import check_grpc
from .limits import check_limits
from .mcp import check_mcp
from .metrics import check_metrics
from .observability import check_tracing
from .problems import PROBLEMS, RETIRED_IDS, problem
from .push import check_push
from .review import check_review
from .security import check_endpoint_not_open
from .store import check_listener, check_store
from .toplevel import check_silenced, check_top_level

__all__ = [
    "PROBLEMS",
    "RETIRED_IDS",
    "check_endpoint_not_open",
    "check_grpc",
    "check_mcp",
    "check_metrics",
    "check_push",
    "check_review",
    "check_settings",
]


def check_settings(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """Every problem of the ``TOOLNEXUS`` setting, part by part."""
    errors = check_silenced()
    raw = getattr(settings, SETTING_NAME, {})
    if not isinstance(raw, dict):
        return [
            *errors,
            problem("E100", f"{SETTING_NAME} must be a dict, not {type(raw).__name__}"),
        ]
    cfg = merge(raw)
    errors += check_top_level(raw, cfg)
    errors += check_store(cfg["STORE"])
    errors += check_listener(cfg)
    errors += check_agent(raw, cfg)
    errors += check_limits(cfg)
    errors += check_review()
    errors += check_push()
    errors += check_mcp()
    errors += check_grpc()
    errors += check_tracing()
    errors += check_metrics()
    return errors


register(check_settings, Tags.compatibility)
register(check_endpoint_not_open, Tags.security)
