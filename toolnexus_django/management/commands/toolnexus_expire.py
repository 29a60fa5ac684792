"""``manage.py toolnexus_expire``: answer expired Requests (ok=False, "expired").

Run it once (from cron) or with ``--loop`` when Tasks are served by processes
other than ``toolnexus_serve`` (which sweeps by itself)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ...expiry import ExpirySweeper, sweep_once


class Command(BaseCommand):
    help = "End the waits whose pending Request expired; their runs continue with that."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--loop", action="store_true", help="Keep sweeping until stopped.")
        parser.add_argument(
            "--interval", type=float, default=5.0, help="Seconds between sweeps with --loop."
        )

    def handle(self, *args: Any, loop: bool, interval: float, **options: Any) -> None:
        if not loop:
            expired = sweep_once()
            self.stdout.write(f"{len(expired)} expired request(s) answered")
            for task_id in expired:
                self.stdout.write(f"  {task_id}")
            return
        sweeper = ExpirySweeper(interval).start()
        self.stdout.write(f"Sweeping expired requests every {interval:g}s (Ctrl-C to stop)")
        try:
            sweeper._stop.wait()
        except KeyboardInterrupt:
            pass
        finally:
            sweeper.stop()
