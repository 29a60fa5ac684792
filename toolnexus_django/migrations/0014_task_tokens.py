"""Tokens kept on the Task (summed over its runs and resumes) and the
dashboard's index; the dashboard's entry on the admin index (a proxy).

On SQLite, Django adds a NOT NULL column by rebuilding the table, which
would drop migration 0005's triggers: there the columns are added with
``ALTER TABLE ... ADD COLUMN`` (allowed with a constant default) instead.
"""

from typing import Any

from django.conf import settings
from django.db import migrations, models

COLUMNS = ("input_tokens", "output_tokens")


def _field(name: str) -> models.Field:
    label = name.replace("_", " ")
    return models.PositiveBigIntegerField(db_default=0, default=0, verbose_name=label)


def _unbound(model: Any, name: str) -> models.Field:
    # The state before this migration has no such field: a detached one.
    field = _field(name)
    field.set_attributes_from_name(name)
    field.model = model
    return field


def add_columns(apps: Any, schema_editor: Any) -> None:
    TaskRecord = apps.get_model("toolnexus_django", "TaskRecord")
    for name in COLUMNS:
        field = _unbound(TaskRecord, name)
        if schema_editor.connection.vendor != "sqlite":
            schema_editor.add_field(TaskRecord, field)
            continue
        definition, params = schema_editor.column_sql(TaskRecord, field, include_default=True)
        qn = schema_editor.quote_name
        schema_editor.execute(
            f"ALTER TABLE {qn(TaskRecord._meta.db_table)} ADD COLUMN {qn(name)} {definition}",
            params,
        )


def drop_columns(apps: Any, schema_editor: Any) -> None:
    TaskRecord = apps.get_model("toolnexus_django", "TaskRecord")
    qn = schema_editor.quote_name
    for name in COLUMNS:
        if schema_editor.connection.vendor != "sqlite":
            schema_editor.remove_field(TaskRecord, _unbound(TaskRecord, name))
        else:  # SQLite ≥ 3.35 drops a column in place (no rebuild: the triggers stay)
            schema_editor.execute(
                f"ALTER TABLE {qn(TaskRecord._meta.db_table)} DROP COLUMN {qn(name)}"
            )


class Migration(migrations.Migration):

    dependencies = [
        ('toolnexus_django', '0013_live_updates'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='TaskDashboard',
            fields=[
            ],
            options={
                'verbose_name': 'dashboard',
                'verbose_name_plural': 'dashboard',
                'proxy': True,
                'default_permissions': (),
                'indexes': [],
                'constraints': [],
            },
            bases=('toolnexus_django.taskrecord',),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(model_name='taskrecord', name=name, field=_field(name))
                for name in COLUMNS
            ],
            database_operations=[migrations.RunPython(add_columns, drop_columns)],
        ),
        migrations.AddIndex(
            model_name='taskrecord',
            index=models.Index(fields=['created_at', 'state', 'owner', 'input_tokens', 'output_tokens'], name='tnx_task_created_usage'),
        ),
    ]
