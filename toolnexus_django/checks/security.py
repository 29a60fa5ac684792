"""Whether the A2A endpoint is open to anyone (W002, a security check)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage
from django.core.exceptions import ImproperlyConfigured
from rest_framework.permissions import AllowAny
from rest_framework.settings import api_settings

from ..conf import import_path, merge, setting_name
from .problems import problem
from .sections import user_setting


def check_endpoint_not_open(
    app_configs: Iterable[Any] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W002: with DEBUG off, the JSON-RPC endpoint should not admit anonymous
    callers: no permission classes, or only AllowAny (or subclasses). Other
    classes (custom, composed with | or &) are assumed to restrict."""
    raw = user_setting()
    if settings.DEBUG or raw is None:
        return []  # a non-dict is E100
    value = merge(raw)["PERMISSION_CLASSES"]
    where = setting_name("PERMISSION_CLASSES")
    try:
        if value is None:
            classes = list(api_settings.DEFAULT_PERMISSION_CLASSES)
        elif isinstance(value, (list, tuple)):
            classes = [import_path(c, f"{where}[{i}]") for i, c in enumerate(value)]
        else:
            return []  # E112
    except (ImportError, ImproperlyConfigured):
        return []  # E003 / E113 report it
    if any(not (isinstance(c, type) and issubclass(c, AllowAny)) for c in classes):
        return []
    source = (
        f"REST_FRAMEWORK['DEFAULT_PERMISSION_CLASSES'] ({where} is None)"
        if value is None
        else where
    )
    return [
        problem(
            "W002",
            f"The A2A endpoint admits anonymous callers and DEBUG is off: {source} "
            + ("is AllowAny only" if classes else "is empty"),
            hint=(
                'Set TOOLNEXUS["PERMISSION_CLASSES"], e.g. '
                '["rest_framework.permissions.IsAuthenticated"], with '
                'TOOLNEXUS["AUTHENTICATION_CLASSES"] that identify callers '
                '(e.g. "rest_framework.authentication.BasicAuthentication" or '
                '"rest_framework.authentication.TokenAuthentication"). If the endpoint '
                'is meant to be open, add "toolnexus_django.W002" to SILENCED_SYSTEM_CHECKS.'
            ),
        )
    ]
