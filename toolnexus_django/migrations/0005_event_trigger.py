"""A move's event in the same statement as the move.

Every compare-and-set writes the Task's row with its new ``event_seq`` and
``last_event``; a trigger copies that event into ``TaskEvent`` — inside the
statement, so the change and its event are atomic without an explicit
transaction or a second round trip (PostgreSQL and SQLite; other databases
fall back to an INSERT in a transaction, see stores/db.py). A Task stored
before keeps its events; its ``event_seq`` is set from them.
"""

from typing import Any

from django.db import migrations, models

import toolnexus_django.strictjson

COLUMNS = "task_id, seq, kind, from_state, to_state, at, actor, actor_kind, via, public, private"


def _postgresql(task: str, event: str) -> tuple[list[str], list[str]]:
    e = "NEW.last_event"
    values = (
        f"NEW.id, NEW.event_seq, {e}->>'kind', COALESCE({e}->>'from_state', ''), "
        f"{e}->>'to_state', ({e}->>'at')::timestamptz, COALESCE({e}->>'actor', ''), "
        f"COALESCE({e}->>'actor_kind', 'system'), COALESCE({e}->>'via', ''), "
        f"COALESCE({e}->'public', '{{}}'::jsonb), COALESCE({e}->'private', '{{}}'::jsonb)"
    )
    create = [
        f"""CREATE OR REPLACE FUNCTION toolnexus_record_task_event() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.last_event IS NOT NULL
             AND (TG_OP = 'INSERT' OR NEW.event_seq IS DISTINCT FROM OLD.event_seq) THEN
            INSERT INTO {event} ({COLUMNS}) VALUES ({values});
          END IF;
          RETURN NULL;
        END $$""",
        f"""CREATE TRIGGER toolnexus_task_event AFTER INSERT OR UPDATE OF event_seq
        ON {task} FOR EACH ROW EXECUTE FUNCTION toolnexus_record_task_event()""",
    ]
    drop = [
        f"DROP TRIGGER IF EXISTS toolnexus_task_event ON {task}",
        "DROP FUNCTION IF EXISTS toolnexus_record_task_event()",
    ]
    return create, drop


def _sqlite(task: str, event: str) -> tuple[list[str], list[str]]:
    def field(name: str, default: str | None = None) -> str:
        value = f"json_extract(NEW.last_event, '$.{name}')"
        return value if default is None else f"ifnull({value}, {default})"

    values = ", ".join(
        [
            "NEW.id",
            "NEW.event_seq",
            field("kind"),
            field("from_state", "''"),
            field("to_state"),
            # The form Django's SQLite backend writes datetimes in (UTC).
            f"strftime('%Y-%m-%d %H:%M:%f', {field('at')})",
            field("actor", "''"),
            field("actor_kind", "'system'"),
            field("via", "''"),
            field("public", "'{}'"),
            field("private", "'{}'"),
        ]
    )
    insert = f"INSERT INTO {event} ({COLUMNS}) VALUES ({values});"
    create = [
        f"""CREATE TRIGGER toolnexus_task_event_insert AFTER INSERT ON {task}
        WHEN NEW.last_event IS NOT NULL BEGIN {insert} END""",
        f"""CREATE TRIGGER toolnexus_task_event_update AFTER UPDATE OF event_seq ON {task}
        WHEN NEW.last_event IS NOT NULL AND NEW.event_seq IS NOT OLD.event_seq
        BEGIN {insert} END""",
    ]
    drop = [
        "DROP TRIGGER IF EXISTS toolnexus_task_event_insert",
        "DROP TRIGGER IF EXISTS toolnexus_task_event_update",
    ]
    return create, drop


VENDORS = {"postgresql": _postgresql, "sqlite": _sqlite}


def _statements(apps: Any, schema_editor: Any) -> tuple[list[str], list[str]] | None:
    make = VENDORS.get(schema_editor.connection.vendor)
    if make is None:
        return None
    qn = schema_editor.connection.ops.quote_name
    task = qn(apps.get_model("toolnexus_django", "TaskRecord")._meta.db_table)
    event = qn(apps.get_model("toolnexus_django", "TaskEvent")._meta.db_table)
    return make(task, event)


def create_triggers(apps: Any, schema_editor: Any) -> None:
    statements = _statements(apps, schema_editor)
    for sql in statements[0] if statements else ():
        schema_editor.execute(sql)
    # Tasks stored before: their next move continues their event numbering.
    TaskRecord = apps.get_model("toolnexus_django", "TaskRecord")
    db = schema_editor.connection.alias
    for record in TaskRecord.objects.using(db).iterator():
        seq = int((record.private or {}).get("seq") or 0)
        if seq:
            TaskRecord.objects.using(db).filter(pk=record.pk).update(event_seq=seq)


def drop_triggers(apps: Any, schema_editor: Any) -> None:
    statements = _statements(apps, schema_editor)
    for sql in statements[1] if statements else ():
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("toolnexus_django", "0004_audit_to_events"),
    ]

    operations = [
        migrations.AddField(
            model_name="taskrecord",
            name="event_seq",
            field=models.PositiveIntegerField(default=0, verbose_name="last event"),
        ),
        migrations.AddField(
            model_name="taskrecord",
            name="last_event",
            field=models.JSONField(
                blank=True,
                encoder=toolnexus_django.strictjson.StorageJSONEncoder,
                null=True,
                verbose_name="last event's data",
            ),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
