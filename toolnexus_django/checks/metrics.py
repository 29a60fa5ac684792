"""``METRICS``: who may read ``<prefix>/metrics``, and whether prometheus_client
is installed (looked up, never imported: it is loaded only once metrics are on)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.core.checks import CheckMessage

from ..conf import setting_name
from .grpc import installed
from .problems import problem
from .sections import user_setting

KEYS = ("TOKEN", "PERMISSION")
#: Django's "app_label.codename" (what ``user.has_perm`` takes).
PERMISSION = re.compile(r"^[A-Za-z_][\w]*\.[\w.-]+$")


def check_metrics(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    raw = user_setting()
    value = raw.get("METRICS") if raw is not None else None
    if value is None:
        return []
    if not isinstance(value, dict):
        return [problem("E950", f"{setting_name('METRICS')} must be a dict or None")]
    errors: list[CheckMessage] = []
    strangers = sorted(set(value) - set(KEYS), key=str)
    if strangers:
        errors.append(
            problem(
                "E951",
                f"{setting_name('METRICS')} has unknown key(s): {', '.join(map(repr, strangers))}",
                hint=f"Known keys: {', '.join(KEYS)}.",
            )
        )
    token, permission = value.get("TOKEN"), value.get("PERMISSION")
    if token is not None and (not isinstance(token, str) or not token.strip()):
        errors.append(
            problem("E953", f"{setting_name('METRICS', 'TOKEN')} must be a non-empty string")
        )
    if permission is not None and not (
        isinstance(permission, str) and PERMISSION.match(permission)
    ):
        errors.append(
            problem(
                "E954",
                f'{setting_name("METRICS", "PERMISSION")} must be "app_label.codename"',
                hint='For example "toolnexus_django.view_taskrecord".',
            )
        )
    if token is None and permission is None:
        errors.append(
            problem(
                "E952",
                f"{setting_name('METRICS')} admits nobody: set TOKEN, PERMISSION or both",
                hint="Or set METRICS to None to turn metrics off.",
            )
        )
    if not installed("prometheus_client"):
        errors.append(
            problem(
                "E955",
                f"{setting_name('METRICS')} is set but prometheus_client cannot be imported",
                hint="Install the metrics extra: pip install 'toolnexus-django[metrics]'.",
            )
        )
    return errors
