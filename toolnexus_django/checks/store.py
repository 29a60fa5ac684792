"""``STORE``: a form ``resolve_store`` takes, and one that will work here; and
``EVENT_LISTENER``: the database the django store's wake-ups are heard on."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage
from django.core.exceptions import ImproperlyConfigured

from ..conf import setting_name
from ..lifecycle.listener import dsn_params
from ..stores import DjangoTaskStore, InvalidStoreError, StoreImportError, TaskStore, resolve_store
from .problems import problem

WHERE = setting_name("STORE")
LISTENER = setting_name("EVENT_LISTENER")
#: Ports connection poolers listen on by default: PgBouncer's, Supabase's transaction pooler's.
POOLER_PORTS = frozenset({"6432", "6543"})
#: What a pooler's host name tends to hold (PgBouncer; Neon's "-pooler", Supabase's "pooler.").
POOLER_WORDS = ("bouncer", "pooler")


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


def check_listener(
    cfg: dict[str, Any], databases: dict[str, Any] | None = None
) -> list[CheckMessage]:
    """EVENT_LISTENER: a form the listener takes (E206), and a database that
    does not look like a pooler in transaction mode, which drops LISTEN (W207).
    ``databases``: settings.DATABASES (read, never connected to)."""
    databases = settings.DATABASES if databases is None else databases
    value = cfg["EVENT_LISTENER"]
    if value is None:  # the django store's own database, if it is PostgreSQL
        alias = store_alias(cfg["STORE"])
        if alias is None or not postgresql(dict(databases.get(alias) or {})):
            return []  # SQLite, memory and file stores poll
        value = alias
    try:
        params = listener_params(value, databases)
    except ImproperlyConfigured as e:
        hint = (
            "None (the store's own database), False (poll only), an alias of DATABASES on "
            'PostgreSQL, or a DSN ("host=db.internal dbname=app", "postgresql://app@db/app").'
        )
        return [problem("E206", str(e), hint=hint)]
    sign = None if params is None else pooler_sign(params)
    if sign is None:
        return []
    return [
        problem(
            "W207",
            f"{LISTENER}: the listener's database looks like a connection pooler ({sign}); "
            "in transaction mode a pooler drops LISTEN without a word",
            hint=(
                f"Set {LISTENER} to an alias or DSN that reaches PostgreSQL directly (the ORM "
                "may keep the pooler), or to False to poll. At run time a probe finds a "
                "dropped LISTEN: one warning, and the process polls."
            ),
        )
    ]


def listener_params(value: Any, databases: dict[str, Any]) -> dict[str, Any] | None:
    """The connection parameters ``value`` names (an alias's settings, a
    DSN's keywords); None: none to look at (False, or no psycopg to parse a
    DSN with). ``ImproperlyConfigured`` for a form the listener does not take."""
    if value is False:
        return None
    if isinstance(value, str) and value in databases:
        db = databases[value]
        if not postgresql(db):
            raise ImproperlyConfigured(f"{LISTENER}: database {value!r} is not PostgreSQL")
        return {**db.get("OPTIONS", {}), **db}
    if isinstance(value, str) and value.strip():
        if importlib.util.find_spec("psycopg") is None:
            return None  # nothing here parses it (and nothing will listen)
        return dsn_params(value)
    raise ImproperlyConfigured(f"{LISTENER} = {value!r} is none of the accepted forms")


def postgresql(db: dict[str, Any] | None) -> bool:
    """Whether a DATABASES entry is PostgreSQL (Django's backend, PostGIS, a wrapper)."""
    engine = str((db or {}).get("ENGINE", ""))
    return "postgresql" in engine or "postgis" in engine


def store_alias(store: Any) -> str | None:
    """The database alias of a django STORE; None for any other store."""
    if isinstance(store, DjangoTaskStore):
        return store.using
    if store == "django":
        return "default"
    if isinstance(store, str) and store.startswith("django:"):
        return store[len("django:") :] or None
    return None


def pooler_sign(params: dict[str, Any]) -> str | None:
    """What says a database's connection parameters (psycopg's, or DATABASES's
    keys) reach a connection pooler, or None."""
    ports = ",".join(str(params.get(key) or "") for key in ("port", "PORT")).split(",")
    port = next((p.strip() for p in ports if p.strip() in POOLER_PORTS), None)
    if port is not None:
        return f"port {port}"
    for host in (str(params.get(key) or "") for key in ("host", "HOST")):
        if any(word in host.lower() for word in POOLER_WORDS):
            return f"host {host!r}"
    if params.get("DISABLE_SERVER_SIDE_CURSORS"):
        return "DISABLE_SERVER_SIDE_CURSORS, which Django asks of a pooler in transaction mode"
    return None
