"""The serving edge's setting check: ``MAX_HEADER_BYTES`` (E009, a number out
of range; registered by the app's ``ready()``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register

from .conf import SETTING_NAME, merge

#: Below this, ordinary browsers' requests (cookies, user agents) would be refused.
MIN_HEADER_BYTES = 1024


@register(Tags.compatibility)
def check_max_header_bytes(
    app_configs: Iterable[Any] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    raw = getattr(settings, SETTING_NAME, {})
    if not isinstance(raw, dict):
        return []  # E001
    value = merge(raw)["MAX_HEADER_BYTES"]
    if isinstance(value, int) and not isinstance(value, bool) and value >= MIN_HEADER_BYTES:
        return []
    return [
        Error(
            f"{SETTING_NAME}['MAX_HEADER_BYTES'] must be a whole number of bytes "
            f">= {MIN_HEADER_BYTES}, not {value!r}",
            hint="The default, 65536 (64 KiB), leaves room for large cookies and tokens.",
            id="toolnexus_django.E009",
        )
    ]
