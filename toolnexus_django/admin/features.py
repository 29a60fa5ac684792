"""Admin pages of features that are off by default (push notifications, the
MCP endpoint): listed on the admin index and in its sidebar only while the
feature is on, so a new project's index leads with the review queue. Their
URLs keep working either way (rows written while a feature was on stay
readable from a Task's page or by address)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest

from ..mcp import config as mcp_config
from ..stores import DjangoTaskStore, get_task_store


def push_on() -> bool:
    """Push configs and deliveries are rows only with the django store (the
    memory and file stores keep them beside the Task, never in these tables)."""
    try:
        return isinstance(get_task_store(), DjangoTaskStore)
    except (ImproperlyConfigured, ValueError):  # the checks report a bad STORE
        return False


def mcp_on() -> bool:
    """``MCP["tools"]`` is set: the endpoint exists, and its calls are audited."""
    return mcp_config.enabled()


class ListedWhenOn:
    """A ModelAdmin mixin: ``feature_on`` says whether the index lists it
    (``has_module_permission`` hides an entry, not its pages)."""

    @staticmethod
    def feature_on() -> bool:
        raise NotImplementedError

    def has_module_permission(self, request: HttpRequest) -> bool:
        listed: Any = super().has_module_permission(request)  # type: ignore[misc]
        return bool(listed) and self.feature_on()
