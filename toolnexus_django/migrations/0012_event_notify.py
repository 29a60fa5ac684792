"""A move's event also wakes the processes waiting on its Task (PostgreSQL).

Migration 0005's trigger function now also ``pg_notify``s the channel
``toolnexus_task_events`` with ``<task id>:<seq>`` (a Task id may hold ``:``:
the seq follows the last one; at most 255 characters of id, far under
NOTIFY's 8,000 bytes). PostgreSQL delivers it when the move commits, never
for one that rolls back; each process's one listener
(toolnexus_django/lifecycle/listener.py) hands it to the waiters. SQLite and
other databases are left as they are: their processes poll the event log.
Reversed, the function is 0005's again.
"""

from importlib import import_module
from typing import Any

from django.db import migrations

#: The channel toolnexus_django.lifecycle.listener.CHANNEL listens on.
CHANNEL = "toolnexus_task_events"

_0005 = import_module("toolnexus_django.migrations.0005_event_trigger")


def _function(event: str) -> str:
    e = "NEW.last_event"
    values = (
        f"NEW.id, NEW.event_seq, {e}->>'kind', COALESCE({e}->>'from_state', ''), "
        f"{e}->>'to_state', ({e}->>'at')::timestamptz, COALESCE({e}->>'actor', ''), "
        f"COALESCE({e}->>'actor_kind', 'system'), COALESCE({e}->>'via', ''), "
        f"COALESCE({e}->'public', '{{}}'::jsonb), COALESCE({e}->'private', '{{}}'::jsonb)"
    )
    return f"""CREATE OR REPLACE FUNCTION toolnexus_record_task_event() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.last_event IS NOT NULL
             AND (TG_OP = 'INSERT' OR NEW.event_seq IS DISTINCT FROM OLD.event_seq) THEN
            INSERT INTO {event} ({_0005.COLUMNS}) VALUES ({values});
            PERFORM pg_notify('{CHANNEL}', NEW.id || ':' || NEW.event_seq);
          END IF;
          RETURN NULL;
        END $$"""


def _tables(apps: Any, schema_editor: Any) -> tuple[str, str]:
    qn = schema_editor.connection.ops.quote_name
    task = apps.get_model("toolnexus_django", "TaskRecord")._meta.db_table
    event = apps.get_model("toolnexus_django", "TaskEvent")._meta.db_table
    return qn(task), qn(event)


def notify(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_function(_tables(apps, schema_editor)[1]))


def stop_notifying(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        create, _drop = _0005._postgresql(*_tables(apps, schema_editor))
        schema_editor.execute(create[0])  # 0005's function (its trigger is unchanged)


class Migration(migrations.Migration):
    dependencies = [
        ("toolnexus_django", "0011_tool_call_outcomes"),
    ]

    operations = [
        migrations.RunPython(notify, stop_notifying),
    ]
