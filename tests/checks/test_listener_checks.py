"""``EVENT_LISTENER``'s checks (toolnexus_django/checks/store.py): a form the
listener does not take is E206; a listener database that looks like a
connection pooler (which, in transaction mode, drops LISTEN without a word) is
W207. The DATABASES they read are given (nothing connects); the payload the
listener parses is here too."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus_django.checks.store import check_listener
from toolnexus_django.conf import merge
from toolnexus_django.lifecycle.listener import parse_payload
from toolnexus_django.stores import DjangoTaskStore

PG = "django.db.backends.postgresql"
DATABASES: dict[str, Any] = {
    "default": {"ENGINE": PG, "NAME": "app", "HOST": "db.internal", "PORT": "5432"},
    "direct": {"ENGINE": PG, "NAME": "app", "HOST": "db.internal", "PORT": 5432},
    "bouncer": {"ENGINE": PG, "NAME": "app", "HOST": "db.internal", "PORT": 6432},
    "neon": {"ENGINE": PG, "NAME": "app", "HOST": "ep-cool-1-pooler.eu.aws.neon.tech"},
    "txmode": {"ENGINE": PG, "NAME": "app", "DISABLE_SERVER_SIDE_CURSORS": True},
    "options": {"ENGINE": PG, "NAME": "app", "OPTIONS": {"port": "6543"}},
    "gis": {"ENGINE": "django.contrib.gis.db.backends.postgis", "NAME": "app", "PORT": 6432},
    "lite": {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"},
}


def ids(store: Any = "django", databases: dict[str, Any] = DATABASES, **keys: Any) -> list[str]:
    cfg = merge({"STORE": store, **keys})
    return [str(m.id).removeprefix("toolnexus_django.") for m in check_listener(cfg, databases)]


@pytest.mark.parametrize(
    "value",
    [
        None,
        False,
        "direct",
        "host=db.internal port=5432 dbname=app",
        "postgresql://app:secret@db.internal:5432/app",
    ],
)
def test_the_accepted_forms_raise_nothing(value: Any) -> None:
    assert ids(EVENT_LISTENER=value) == []


@pytest.mark.parametrize(
    "value",
    [True, 5432, "", "  ", "listener-db", "lite", ["direct"], "host=db port=5432 dbname"],
)
def test_a_form_the_listener_does_not_take_is_e206(value: Any) -> None:
    assert ids(EVENT_LISTENER=value) == ["E206"]


@pytest.mark.parametrize(
    "value",
    [
        "bouncer",
        "neon",
        "txmode",
        "options",
        "gis",
        "host=127.0.0.1 port=6432 dbname=app",
        "host=pgbouncer.internal dbname=app",
        "postgresql://app@aws-0-eu.pooler.supabase.com:6543/postgres",
    ],
)
def test_a_listener_database_that_looks_like_a_pooler_is_w207(value: Any) -> None:
    assert ids(EVENT_LISTENER=value) == ["W207"]


def test_none_is_the_django_stores_own_database_when_it_is_postgresql() -> None:
    assert ids("django:bouncer") == ["W207"]
    assert ids(DjangoTaskStore(using="txmode")) == ["W207"]
    assert ids("django") == []  # default: direct
    # A pooled store's process can still listen directly.
    assert ids("django:bouncer", EVENT_LISTENER="direct") == []
    assert ids("django:bouncer", EVENT_LISTENER=False) == []


def test_stores_that_poll_need_no_listener() -> None:
    for store in ("django:lite", "memory", "file:/tmp/tasks", "django:nosuchdb"):
        assert ids(store) == []


@pytest.mark.parametrize(
    ("payload", "parsed"),
    [
        ("t-1:7", ("t-1", 7)),
        ("tenant:42:task:3", ("tenant:42:task", 3)),  # an id with ':' parses from the right
        ("0f6c5a1e-9b1d-4f7e-8a44-3f0d2a1b9c77:12", ("0f6c5a1e-9b1d-4f7e-8a44-3f0d2a1b9c77", 12)),
        ("ünïcode/id:1", ("ünïcode/id", 1)),
        ("probe 3f0d2a1b", None),  # the listener's probe: no ':'
        (":5", None),
        ("t-1:", None),
        ("t-1:x", None),
        ("t-1:-3", None),
        ("t-1:²", None),  # a digit to str.isdigit, not a seq
        ("", None),
    ],
)
def test_a_notifications_payload_is_task_id_colon_seq(
    payload: str, parsed: tuple[str, int] | None
) -> None:
    assert parse_payload(payload) == parsed
