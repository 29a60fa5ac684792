"""Conversation memory: the transcript of each owner's A2A ``contextId``.

A message that names a ``contextId`` joins its owner's conversation of that
id: its run starts from the conversation's transcript, so the agent
remembers earlier turns. A conversation belongs to one owner (the Task's
owner; all anonymous callers of an open endpoint are one owner): another
caller who sends the same contextId gets a separate conversation of their
own and never sees, or adds to, the first one (:func:`conversation_key`).
The transcript lives in a toolnexus ``ConversationStore``:

- ``DjangoConversationStore`` — rows of the ``Conversation`` model: survives
  restarts and is shared by every process (the default with the django store);
- toolnexus's ``InMemoryConversationStore`` — this process only (the default
  with the memory and file stores).

``TOOLNEXUS["CONVERSATIONS"]``: ``"auto"`` (above), ``"django"``, ``"memory"``,
``None`` (no memory: every Task starts afresh), or a dotted path / instance
(it is handed the keys :func:`conversation_key` makes). Worker threads use
the sync ``load``/``remember`` helpers; the async ``get``/``save`` are
toolnexus's protocol, so the same object can be handed to a toolnexus
``Client(store=...)``. What is remembered is bounded: the last
``MAX_MEMORY_MESSAGES`` messages, starting at a user turn, each text cut at
``MAX_OUTPUT_CHARS``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import quote, unquote

import toolnexus
from asgiref.sync import sync_to_async
from django.db import connections
from django.utils import timezone

from ..bounds import bound_transcript
from ..conf import import_path, setting_name, toolnexus_settings
from ..runtime.registry import PerProcess
from ..stores import DjangoTaskStore, get_task_store

Messages = list[dict[str, Any]]

ANONYMOUS_TAG = "-"


def conversation_key(owner: str | None, context_id: str) -> str:
    """The key of ``owner``'s conversation ``context_id``: the owner's tag
    (``-`` for anonymous, ``u:<pk>`` percent-encoded, so it holds no ``/``)
    then ``/`` then the contextId — two owners never share a key."""
    tag = ANONYMOUS_TAG if owner in (None, "") else "u:" + quote(str(owner), safe="")
    return f"{tag}/{context_id}"


def split_key(key: str) -> tuple[str, str]:
    """(owner as stored in ``Conversation.owner``, contextId) of a key."""
    tag, _, context_id = key.partition("/")
    owner = "" if tag == ANONYMOUS_TAG else unquote(tag.removeprefix("u:"))
    return owner, context_id


class DjangoConversationStore:
    """toolnexus's ConversationStore protocol over the ``Conversation`` model."""

    def __init__(self, using: str = "default") -> None:
        self.using = using

    # Both statements are built by hand, once per connection vendor: the
    # ORM's compile of them was most of their cost (profiled, one per run).

    def get_sync(self, id: str) -> Messages | None:
        from ..models import Conversation

        connection = connections[self.using]
        qn = connection.ops.quote_name
        sql = (
            f"SELECT {qn('messages')} FROM {qn(Conversation._meta.db_table)} WHERE {qn('key')} = %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [id])
            row = cursor.fetchone()
        if row is None:
            return None
        value = json.loads(row[0]) if isinstance(row[0], (str, bytes)) else row[0]
        return list(value)

    def save_sync(self, id: str, messages: Messages) -> None:
        """One upsert statement: the conversation's whole (bounded) transcript."""
        from ..models import Conversation

        owner, context_id = split_key(id)
        connection = connections[self.using]
        qn = connection.ops.quote_name
        field = Conversation._meta.get_field("messages")
        columns = ("key", "owner", "context_id", "messages", "updated_at")
        values = [
            id,
            owner,
            context_id,
            field.get_db_prep_save(list(messages), connection),
            Conversation._meta.get_field("updated_at").get_db_prep_save(timezone.now(), connection),
        ]
        sql = (
            f"INSERT INTO {qn(Conversation._meta.db_table)} "
            f"({', '.join(qn(c) for c in columns)}) VALUES (%s, %s, %s, %s, %s) "
            f"ON CONFLICT ({qn('key')}) DO UPDATE SET "
            f"{qn('messages')} = EXCLUDED.{qn('messages')}, "
            f"{qn('updated_at')} = EXCLUDED.{qn('updated_at')}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, values)

    async def get(self, id: str) -> Messages | None:
        return await sync_to_async(self.get_sync)(id)

    async def save(self, id: str, messages: Messages) -> None:
        await sync_to_async(self.save_sync)(id, messages)


def load(store: Any, owner: str | None, context_id: str | None) -> Messages | None:
    """``owner``'s transcript of conversation ``context_id``, from a worker thread."""
    if store is None or not context_id:
        return None
    key = conversation_key(owner, context_id)
    if hasattr(store, "get_sync"):
        return store.get_sync(key)
    return asyncio.run(store.get(key))


def remember(store: Any, owner: str | None, context_id: str | None, messages: Messages) -> None:
    """Keep a finished run's transcript (bounded) as ``owner``'s conversation
    ``context_id``, from a worker thread."""
    if store is None or not context_id:
        return
    key = conversation_key(owner, context_id)
    kept = bound_transcript(
        messages,
        max_messages=int(toolnexus_settings.MAX_MEMORY_MESSAGES),
        max_chars=int(toolnexus_settings.MAX_OUTPUT_CHARS),
    )
    if hasattr(store, "save_sync"):
        store.save_sync(key, kept)
    else:
        asyncio.run(store.save(key, kept))


class _NoMemory:
    """CONVERSATIONS = None: nothing is remembered."""


_store: PerProcess[Any] = PerProcess(
    "conversation store", lambda: _resolve(toolnexus_settings.CONVERSATIONS) or _NoMemory()
)


def get_conversation_store() -> Any:
    """The process-wide conversation store from ``TOOLNEXUS["CONVERSATIONS"]``
    (None when conversations are off)."""
    store = _store.get()
    return None if isinstance(store, _NoMemory) else store


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
    value = import_path(value, setting_name("CONVERSATIONS"))
    return value() if isinstance(value, type) else value
