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

from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..conf import import_path, setting_name, toolnexus_settings
from ..runtime.registry import PerProcess
from .adapter import ToolnexusStoreAdapter, as_toolnexus_store
from .base import PRIVATE_KEY, DuplicateMessage, Task, TaskStore
from .db import DjangoTaskStore
from .file import FileTaskStore
from .memory import InMemoryTaskStore

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

ACCEPTED_FORMS = (
    'None, "memory", "file:<dir>", "django", "django:<database alias>", '
    "a TaskStore instance or subclass, or a dotted path to one"
)


class InvalidStoreError(ImproperlyConfigured, ValueError):
    """A STORE value none of the accepted forms matches."""


class StoreImportError(InvalidStoreError):
    """A STORE dotted path that does not import."""


def resolve_store(store: Any = None) -> TaskStore:
    """Map a ``STORE`` selector to a concrete :class:`TaskStore`."""
    if store is None or store == "memory":
        return InMemoryTaskStore()
    if isinstance(store, TaskStore):
        return store
    if isinstance(store, type) and issubclass(store, TaskStore):
        return store()
    if isinstance(store, str):
        if store.startswith("file:"):
            directory = store[len("file:") :]
            if not directory:
                raise InvalidStoreError(
                    f'STORE "file:" needs a directory: expected {ACCEPTED_FORMS}'
                )
            return FileTaskStore(directory)
        if store == "django":
            return DjangoTaskStore()
        if store.startswith("django:"):
            alias = store[len("django:") :]
            if not alias:
                raise InvalidStoreError(
                    f'STORE "django:" needs a database alias: expected {ACCEPTED_FORMS}'
                )
            return DjangoTaskStore(using=alias)
        if "." in store and ":" not in store and "/" not in store:
            try:
                target = import_path(store, setting_name("STORE"))
            except ImproperlyConfigured as e:
                raise StoreImportError(
                    f"STORE {store!r} could not be imported ({e.__cause__}): "
                    f"expected {ACCEPTED_FORMS}"
                ) from e
            if isinstance(target, str):
                raise InvalidStoreError(
                    f"STORE {store!r} names a string, not a store: expected {ACCEPTED_FORMS}"
                )
            return resolve_store(target)
    raise InvalidStoreError(f"Unknown task store {store!r}: expected {ACCEPTED_FORMS}")


#: The process-wide store built from ``TOOLNEXUS["STORE"]``: built once, so the
#: in-memory store is one map per process; built again when settings change.
_store = PerProcess("task store", lambda: resolve_store(toolnexus_settings.STORE))


def get_task_store() -> TaskStore:
    """The process-wide store built from ``TOOLNEXUS["STORE"]``."""
    return _store.get()
