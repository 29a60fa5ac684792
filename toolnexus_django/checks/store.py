"""``STORE``: a form ``resolve_store`` takes, and one that will work here."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage

from ..conf import setting_name
from ..stores import InvalidStoreError, StoreImportError, TaskStore, resolve_store
from .problems import problem

WHERE = setting_name("STORE")


def check_store(store: Any) -> list[CheckMessage]:
    if isinstance(store, str) and store.startswith("file:"):
        directory = store[len("file:") :]
        trouble = directory_problem(directory) if directory else "no directory given"
        if trouble is None:
            return []
        return [
            problem(
                "E203",
                f"{WHERE} = {store!r}: the directory cannot be created ({trouble})",
                hint='Use "file:<dir>" with a directory this process can create or write to.',
            )
        ]
    if isinstance(store, str) and store.startswith("django:"):
        alias = store[len("django:") :]
        if alias and alias not in settings.DATABASES:
            return [
                problem(
                    "E204",
                    f"{WHERE} = {store!r}: {alias!r} is not in settings.DATABASES",
                    hint=f"Known aliases: {', '.join(settings.DATABASES)}.",
                )
            ]
    if store is None or isinstance(store, TaskStore) or store in ("memory", "django"):
        return []
    try:
        resolve_store(store)
    except StoreImportError as e:
        return [problem("E202", f"{WHERE}: {e}")]
    except InvalidStoreError as e:
        return [problem("E201", f"{WHERE}: {e}")]
    except Exception as e:  # a custom store whose constructor fails
        return [problem("E205", f"{WHERE} = {store!r} failed to build: {e}")]
    return []


def directory_problem(directory: str) -> str | None:
    """Why FileTaskStore(directory) could not create / write its directory, or
    None. Creates nothing: walks up to the nearest existing ancestor."""
    path = os.path.abspath(directory)
    if os.path.exists(path):
        if not os.path.isdir(path):
            return "it exists and is not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return "it is not writable"
        return None
    ancestor = os.path.dirname(path)
    while not os.path.exists(ancestor) and os.path.dirname(ancestor) != ancestor:
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        return f"{ancestor} is not a directory"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{ancestor} is not writable"
    return None
