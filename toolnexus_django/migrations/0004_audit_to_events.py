"""The audit trail kept inside each Task (``_private.audit``) becomes its
event log: one TaskEvent per recorded decision, numbered from 1 in order, and
the Task's ``seq`` set to the last of them. Earlier moves were not recorded
then, so a migrated Task's events start at its first decision."""

from datetime import UTC, datetime
from typing import Any

from django.db import migrations
from django.utils import timezone

ANSWER_DECISIONS = {"approve", "decline", "reply", "authorize", "message"}


def _when(value: Any) -> datetime:
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return timezone.now()
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def audit_to_events(apps: Any, schema_editor: Any) -> None:
    TaskRecord = apps.get_model("toolnexus_django", "TaskRecord")
    TaskEvent = apps.get_model("toolnexus_django", "TaskEvent")
    db = schema_editor.connection.alias
    rows = TaskRecord.objects.using(db).filter(private__has_key="audit")
    for record in rows.iterator():
        private = dict(record.private or {})
        audit = [e for e in private.pop("audit", None) or () if isinstance(e, dict)]
        events = []
        for seq, entry in enumerate(audit, start=1):
            decision = str(entry.get("decision") or "")
            kind = "answer" if decision in ANSWER_DECISIONS else decision or "answer"
            via = str(entry.get("via") or "")
            events.append(
                TaskEvent(
                    task_id=record.pk,
                    seq=seq,
                    kind=kind,
                    from_state=str(entry.get("from") or ""),
                    to_state=str(entry.get("to") or ""),
                    at=_when(entry.get("at")),
                    actor=str(entry.get("actor") or ""),
                    actor_kind="system" if via == "expiry" else "user",
                    via=via,
                    public={"status": {"state": str(entry.get("to") or "")}},
                    private={
                        k: entry[k]
                        for k in ("decision", "role", "ok", "data", "reason", "comment", "kind")
                        if k in entry
                    }
                    | ({"request": entry["request"]} if "request" in entry else {}),
                )
            )
        TaskEvent.objects.using(db).bulk_create(events)
        private["seq"] = len(events)
        TaskRecord.objects.using(db).filter(pk=record.pk).update(private=private)


def events_to_audit(apps: Any, schema_editor: Any) -> None:
    TaskRecord = apps.get_model("toolnexus_django", "TaskRecord")
    TaskEvent = apps.get_model("toolnexus_django", "TaskEvent")
    db = schema_editor.connection.alias
    for record in TaskRecord.objects.using(db).iterator():
        events = TaskEvent.objects.using(db).filter(task_id=record.pk).order_by("seq")
        audit = [
            {
                "at": e.at.isoformat(),
                "actor": e.actor or None,
                "via": e.via,
                "from": e.from_state,
                "to": e.to_state,
                **(e.private or {}),
            }
            for e in events
            if e.kind in ("answer", "expire", "cancel")
        ]
        if audit:
            TaskRecord.objects.using(db).filter(pk=record.pk).update(
                private={**(record.private or {}), "audit": audit}
            )


class Migration(migrations.Migration):
    dependencies = [
        ("toolnexus_django", "0003_task_events"),
    ]

    operations = [migrations.RunPython(audit_to_events, events_to_audit)]
