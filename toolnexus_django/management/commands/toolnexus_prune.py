"""``manage.py toolnexus_prune``: delete finished Tasks older than a cutoff.

Only terminal Tasks (completed, failed, canceled, rejected) are ever pruned —
a Task that runs or waits on a person is never touched. Works on the django
store (it deletes TaskRecord rows, in batches, and the conversations no
remaining Task refers to with ``--conversations``), and the recorded outcomes
of ``atomic=`` tool calls that no Task can replay any more."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from ...models import TERMINAL_STATES, Conversation, PushConfig, TaskRecord, ToolCallOutcome
from ...push.locks import lock_configs

BATCH = 1000


def _age(value: str) -> timedelta:
    units = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    try:
        number, unit = float(value[:-1]), units[value[-1]]
    except (ValueError, KeyError, IndexError):
        raise CommandError(
            f"--older-than {value!r}: use a number and s/m/h/d/w, e.g. 30d"
        ) from None
    if number < 0:
        raise CommandError("--older-than must not be negative")
    return timedelta(**{unit: number})


class Command(BaseCommand):
    help = "Delete finished Tasks (completed/failed/canceled/rejected) older than a cutoff."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            default="30d",
            help="age since the Task last changed: 90s, 15m, 12h, 30d, 2w (default 30d)",
        )
        parser.add_argument(
            "--state",
            action="append",
            choices=sorted(TERMINAL_STATES),
            help="only these states (repeatable; default: every terminal state)",
        )
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")
        parser.add_argument(
            "--conversations",
            action="store_true",
            help="also delete conversations no remaining Task belongs to",
        )
        parser.add_argument("--database", default="default", help="database alias")

    def handle(self, *args: Any, **options: Any) -> None:
        cutoff = timezone.now() - _age(options["older_than"])
        states = options["state"] or sorted(TERMINAL_STATES)
        using = options["database"]
        rows = TaskRecord.objects.using(using).filter(state__in=states, updated_at__lt=cutoff)
        if options["dry_run"]:
            self.stdout.write(f"would delete {rows.count()} task(s) ({', '.join(states)})")
            return
        deleted = 0
        while True:
            ids = list(rows.values_list("pk", flat=True)[:BATCH])
            if not ids:
                break
            with transaction.atomic(using=using):
                # The Tasks first, in id order, then what goes with them —
                # their events, push configs and deliveries (push.locks' order).
                batch = TaskRecord.objects.using(using).filter(pk__in=ids).order_by("pk")
                ids = list(batch.select_for_update().values_list("pk", flat=True))
                lock_configs(PushConfig.objects.using(using).filter(task_id__in=ids))
                _, by_model = TaskRecord.objects.using(using).filter(pk__in=ids).delete()
                deleted += by_model.get(TaskRecord._meta.label, 0)
                ToolCallOutcome.objects.using(using).filter(task_id__in=ids).delete()
        self.stdout.write(f"deleted {deleted} task(s) ({', '.join(states)})")
        self._prune_outcomes(using, cutoff)
        if options["conversations"]:
            orphans = (
                Conversation.objects.using(using)
                .filter(updated_at__lt=cutoff)
                .exclude(context_id__in=TaskRecord.objects.using(using).values("context_id"))
            )
            count = orphans.delete()[0]
            self.stdout.write(f"deleted {count} conversation(s)")

    def _prune_outcomes(self, using: str, cutoff: Any) -> None:
        """Recorded tool outcomes older than the cutoff whose Task no longer
        runs or waits (a replay is the only reader), whatever store it was in."""
        live = TaskRecord.objects.using(using).exclude(state__in=TERMINAL_STATES)
        old = ToolCallOutcome.objects.using(using).filter(created_at__lt=cutoff)
        count = old.exclude(task_id__in=live.values("pk")).delete()[0]
        if count:
            self.stdout.write(f"deleted {count} tool call outcome(s)")
