"""``manage.py toolnexus_sweep``: answer expired Requests and recover Tasks
whose worker died. ``toolnexus_serve`` sweeps by itself; run this (once from
cron, or with ``--loop``) when Tasks are served by other processes."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ...conf import toolnexus_settings
from ...fulfilment.sweep import Housekeeper, sweep_once


class Command(BaseCommand):
    help = "Answer expired requests (ok=False) and re-run tasks whose worker died."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--loop", action="store_true", help="Keep sweeping until stopped.")
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            help="Seconds between sweeps with --loop (default EXPIRY_SWEEP_INTERVAL, else 5).",
        )

    def handle(self, *args: Any, loop: bool, interval: float | None, **options: Any) -> None:
        if not loop:
            done = sweep_once()
            for kind in ("expired", "requeued", "resumed", "failed"):
                self.stdout.write(f"{kind}: {len(done[kind])}")
                for task_id in done[kind]:
                    self.stdout.write(f"  {task_id}")
            return
        if interval is None:
            interval = float(toolnexus_settings.EXPIRY_SWEEP_INTERVAL) or 5.0
        keeper = Housekeeper(interval).start()
        self.stdout.write(f"Sweeping every {interval:g}s (Ctrl-C to stop)")
        try:
            keeper.stopped.wait()
        except KeyboardInterrupt:
            pass
        finally:
            keeper.stop()
