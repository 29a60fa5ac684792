"""Conversation memory: the transcript of each A2A ``contextId``.

A message that names a ``contextId`` joins that conversation: its run starts
from the conversation's transcript, so the agent remembers earlier turns. The
transcript lives in a toolnexus ``ConversationStore``:

- ``DjangoConversationStore`` — rows of the ``Conversation`` model: survives
  restarts and is shared by every process (the default with the django store);
- toolnexus's ``InMemoryConversationStore`` — this process only (the default
  with the memory and file stores).

``TOOLNEXUS["CONVERSATIONS"]``: ``"auto"`` (above), ``"django"``, ``"memory"``,
``None`` (no memory: every Task starts afresh), or a dotted path / instance.
Worker threads use the sync ``load``/``store`` helpers; the async ``get``/
``save`` are toolnexus's protocol, so the same object can be handed to a
toolnexus ``Client(store=...)``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import toolnexus
from asgiref.sync import sync_to_async
from django.utils.module_loading import import_string

from .conf import toolnexus_settings
from .stores import DjangoTaskStore, get_task_store

Messages = list[dict[str, Any]]


class DjangoConversationStore:
    """toolnexus's ConversationStore protocol over the ``Conversation`` model."""

    def __init__(self, using: str = "default") -> None:
        self.using = using

    def get_sync(self, id: str) -> Messages | None:
        from .models import Conversation

        row = (
            Conversation.objects.using(self.using)
            .filter(pk=id)
            .values_list("messages", flat=True)
            .first()
        )
        return list(row) if row is not None else None

    def save_sync(self, id: str, messages: Messages) -> None:
        from .models import Conversation

        # One upsert statement, not update_or_create's SELECT + write.
        Conversation.objects.using(self.using).bulk_create(
            [Conversation(context_id=id, messages=list(messages))],
            update_conflicts=True,
            unique_fields=["context_id"],
            update_fields=["messages", "updated_at"],
        )

    async def get(self, id: str) -> Messages | None:
        return await sync_to_async(self.get_sync)(id)

    async def save(self, id: str, messages: Messages) -> None:
        await sync_to_async(self.save_sync)(id, messages)


def load(store: Any, context_id: str | None) -> Messages | None:
    """The conversation's transcript, from a worker thread."""
    if store is None or not context_id:
        return None
    if hasattr(store, "get_sync"):
        return store.get_sync(context_id)
    return asyncio.run(store.get(context_id))


def remember(store: Any, context_id: str | None, messages: Messages) -> None:
    """Keep a finished run's transcript as the conversation's, from a worker thread."""
    if store is None or not context_id:
        return
    if hasattr(store, "save_sync"):
        store.save_sync(context_id, messages)
    else:
        asyncio.run(store.save(context_id, messages))


_lock = threading.Lock()
_store: Any = None
_resolved = False


def get_conversation_store() -> Any:
    """The process-wide conversation store from ``TOOLNEXUS["CONVERSATIONS"]``."""
    global _store, _resolved
    if not _resolved:
        with _lock:
            if not _resolved:
                _store = _resolve(toolnexus_settings.CONVERSATIONS)
                _resolved = True
    return _store


def _resolve(value: Any) -> Any:
    if value is None:
        return None
    if value == "auto":
        task_store = get_task_store()
        if isinstance(task_store, DjangoTaskStore):
            return DjangoConversationStore(task_store.using)
        return toolnexus.InMemoryConversationStore()
    if value == "django":
        return DjangoConversationStore()
    if value == "memory":
        return toolnexus.InMemoryConversationStore()
    if isinstance(value, str):
        value = import_string(value)
    return value() if isinstance(value, type) else value


def _forget() -> None:
    global _store, _resolved
    with _lock:
        _store, _resolved = None, False


toolnexus_settings.on_reload(_forget)
