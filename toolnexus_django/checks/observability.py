"""``TRACING``: OpenTelemetry traces — a boolean, and on only where
``opentelemetry-api`` is installed (looked up, never imported: nothing of
OpenTelemetry is loaded unless tracing is on)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.checks import CheckMessage

from ..conf import setting_name, toolnexus_settings
from .grpc import installed
from .problems import problem


def check_tracing(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    tracing = toolnexus_settings.TRACING
    if not isinstance(tracing, bool):
        return [problem("E900", f"{setting_name('TRACING')} must be True or False")]
    if tracing and not (installed("opentelemetry") and installed("opentelemetry.trace")):
        return [
            problem(
                "E901",
                f"{setting_name('TRACING')} is on but opentelemetry-api cannot be imported: "
                "nothing would be traced",
                hint="Install the traces extra: pip install 'toolnexus-django[otel]' "
                "(and the SDK and exporters your project sends spans with).",
            )
        ]
    return []
