"""Which store a ``STORE`` value names: :func:`resolve_store` (the forms
are listed in :mod:`toolnexus_django.stores`)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..conf import import_path, setting_name
from .base import TaskStore
from .db import DjangoTaskStore
from .file import FileTaskStore
from .memory import InMemoryTaskStore

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
