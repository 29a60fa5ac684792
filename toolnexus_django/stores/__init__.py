"""Pluggable Task stores, like ``django.contrib.sessions.backends``.

``TOOLNEXUS["STORE"]`` goes straight through :func:`resolve_store`::

    None | "memory"        -> InMemoryTaskStore()   (the default)
    "file:<dir>"           -> FileTaskStore(<dir>)
    "django"               -> DjangoTaskStore()      ("django:<alias>" picks a database)
    a TaskStore instance   -> used as-is
    a TaskStore subclass   -> instantiated with no arguments
    "pkg.module.Name"      -> imported, then as above
"""

from __future__ import annotations

from ..conf import toolnexus_settings
from ..runtime.registry import PerProcess
from .adapter import ToolnexusStoreAdapter, as_toolnexus_store
from .base import PRIVATE_KEY, DuplicateMessage, Task, TaskStore
from .db import DjangoTaskStore
from .file import FileTaskStore
from .memory import InMemoryTaskStore
from .resolve import InvalidStoreError, StoreImportError, resolve_store

__all__ = [
    "PRIVATE_KEY",
    "DjangoTaskStore",
    "DuplicateMessage",
    "FileTaskStore",
    "InMemoryTaskStore",
    "InvalidStoreError",
    "StoreImportError",
    "Task",
    "TaskStore",
    "ToolnexusStoreAdapter",
    "as_toolnexus_store",
    "get_task_store",
    "resolve_store",
]

#: The process-wide store built from ``TOOLNEXUS["STORE"]``: built once, so the
#: in-memory store is one map per process; built again when settings change.
_store = PerProcess("task store", lambda: resolve_store(toolnexus_settings.STORE))


def get_task_store() -> TaskStore:
    """The process-wide store built from ``TOOLNEXUS["STORE"]``."""
    return _store.get()
