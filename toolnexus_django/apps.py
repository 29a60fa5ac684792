from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ToolnexusDjangoConfig(AppConfig):
    name = "toolnexus_django"
    verbose_name = _("Agent tasks")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the system checks (the package registers them on import).
        from . import checks  # noqa: F401
        from .review.notifications import email_reviewers
        from .signals import awaiting_human

        awaiting_human.connect(email_reviewers, dispatch_uid="toolnexus_django.email_reviewers")

        # Push notifications: each move schedules its Task's webhooks; each
        # sweep schedules what is due (retries, what a dead process left).
        from .fulfilment.sweep import EXTRA_SWEEPS
        from .push.delivery import on_task_event, sweep
        from .signals import task_event

        task_event.connect(on_task_event, dispatch_uid="toolnexus_django.push")
        if sweep not in EXTRA_SWEEPS:
            EXTRA_SWEEPS.append(sweep)

        # Remembered credentials: forgotten when this process changes a user or a token.
        from .serving.credentials import connect_signals

        connect_signals()

        # Review: reminders and escalations of Requests nearing expiry, by
        # each sweep (no work while REVIEW["REMIND_BEFORE"] is None).
        from .review.reminders import remind_due

        if remind_due not in EXTRA_SWEEPS:
            EXTRA_SWEEPS.append(remind_due)

        # Prometheus metrics (TOOLNEXUS["METRICS"]): the receivers that count
        # moves and MCP calls, connected only while it is set (no
        # prometheus_client import until then).
        from .observability.metric_sources import follow_setting
        from .serving.metrics import sample_process

        follow_setting()
        # Each sweep samples this process's gauges (a no-op while it is unset).
        if sample_process not in EXTRA_SWEEPS:
            EXTRA_SWEEPS.append(sample_process)

        # The per-process pieces runtime.start() / stop() walk register
        # themselves where they are defined (the runtime package sits below
        # them): import those modules (the sweep and push's are above) so the
        # registry is complete. Nothing starts here: the runtime starts on
        # runtime.start() or first use, never because the app was imported.
        from .a2a import follow  # noqa: F401
        from .agent import runtime  # noqa: F401
        from .fulfilment import leases, runs  # noqa: F401
        from .tools import budget  # noqa: F401
