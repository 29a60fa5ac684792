"""The endpoint's security check (W002), registered with the settings checks
(:mod:`.checks`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, Warning, register
from django.utils.module_loading import import_string

from .conf import SETTING_NAME, merge


@register(Tags.security)
def check_endpoint_not_open(
    app_configs: Iterable[Any] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """W002: with DEBUG off, the JSON-RPC endpoint should not admit anonymous
    callers: no permission classes, or only AllowAny (or subclasses). Other
    classes (custom, composed with | or &) are assumed to restrict."""
    raw = getattr(settings, SETTING_NAME, {})
    if settings.DEBUG or not isinstance(raw, dict):
        return []  # a non-dict is E001
    value = merge(raw)["PERMISSION_CLASSES"]
    try:
        from rest_framework.permissions import AllowAny
        from rest_framework.settings import api_settings

        if value is None:
            classes = list(api_settings.DEFAULT_PERMISSION_CLASSES)
        elif isinstance(value, (list, tuple)):
            classes = [import_string(c) if isinstance(c, str) else c for c in value]
        else:
            return []  # E006
    except ImportError:
        return []  # E003 / E007 report it
    if any(not (isinstance(c, type) and issubclass(c, AllowAny)) for c in classes):
        return []
    source = (
        "REST_FRAMEWORK['DEFAULT_PERMISSION_CLASSES'] (TOOLNEXUS['PERMISSION_CLASSES'] is None)"
        if value is None
        else f"{SETTING_NAME}['PERMISSION_CLASSES']"
    )
    return [
        Warning(
            f"The A2A endpoint admits anonymous callers and DEBUG is off: {source} "
            + ("is AllowAny only" if classes else "is empty"),
            hint=(
                f'Set {SETTING_NAME}["PERMISSION_CLASSES"], e.g. '
                '["rest_framework.permissions.IsAuthenticated"], with '
                f'{SETTING_NAME}["AUTHENTICATION_CLASSES"] that identify callers '
                '(e.g. "rest_framework.authentication.BasicAuthentication" or '
                '"rest_framework.authentication.TokenAuthentication"). If the endpoint '
                'is meant to be open, add "toolnexus_django.W002" to SILENCED_SYSTEM_CHECKS.'
            ),
            id="toolnexus_django.W002",
        )
    ]
