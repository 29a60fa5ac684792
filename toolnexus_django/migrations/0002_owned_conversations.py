"""Conversations keyed by owner and contextId, not contextId alone.

Before this, a caller who sent another owner's contextId joined that owner's
conversation. Each existing conversation is given the owner of its Tasks; one
whose Tasks have several owners (already mixed) or none cannot be attributed
and is dropped — conversation memory is a convenience, Tasks keep their history.
"""

from typing import Any
from urllib.parse import quote

from django.db import migrations, models


def _key(owner: Any, context_id: str) -> str:
    # Frozen copy of conversations.conversation_key at the time of this migration.
    tag = "-" if owner in (None, "") else "u:" + quote(str(owner), safe="")
    return f"{tag}/{context_id}"


def attribute_conversations(apps: Any, schema_editor: Any) -> None:
    Conversation = apps.get_model("toolnexus_django", "Conversation")
    TaskRecord = apps.get_model("toolnexus_django", "TaskRecord")
    db = schema_editor.connection.alias
    for old in list(Conversation.objects.using(db).all()):
        context_id = old.key
        owners = set(
            TaskRecord.objects.using(db)
            .filter(context_id=context_id)
            .values_list("owner_id", flat=True)
            .distinct()
        )
        Conversation.objects.using(db).filter(pk=old.pk).delete()
        if len(owners) != 1:
            continue
        (owner,) = owners
        Conversation.objects.using(db).create(
            key=_key(owner, context_id),
            owner="" if owner is None else str(owner),
            context_id=context_id,
            messages=old.messages,
        )


def key_by_context_again(apps: Any, schema_editor: Any) -> None:
    Conversation = apps.get_model("toolnexus_django", "Conversation")
    db = schema_editor.connection.alias
    seen: set[str] = set()
    for row in list(Conversation.objects.using(db).order_by("-updated_at")):
        Conversation.objects.using(db).filter(pk=row.pk).delete()
        if row.context_id in seen:
            continue  # two owners' conversations cannot share one key again
        seen.add(row.context_id)
        Conversation.objects.using(db).create(
            key=row.context_id, context_id=row.context_id, messages=row.messages
        )


class Migration(migrations.Migration):
    dependencies = [
        ("toolnexus_django", "0001_initial"),
    ]

    operations = [
        migrations.RenameField(model_name="conversation", old_name="context_id", new_name="key"),
        migrations.AlterField(
            model_name="conversation",
            name="key",
            field=models.CharField(
                max_length=512, primary_key=True, serialize=False, verbose_name="key"
            ),
        ),
        migrations.AddField(
            model_name="conversation",
            name="owner",
            field=models.CharField(blank=True, default="", max_length=255, verbose_name="owner"),
        ),
        migrations.AddField(
            model_name="conversation",
            name="context_id",
            field=models.CharField(
                blank=True, default="", max_length=255, verbose_name="context id"
            ),
        ),
        migrations.RunPython(attribute_conversations, key_by_context_again),
        migrations.AddIndex(
            model_name="conversation",
            index=models.Index(fields=["context_id"], name="tnx_conversation_context"),
        ),
    ]
