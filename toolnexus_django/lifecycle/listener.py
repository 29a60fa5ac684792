"""Wake-ups by PostgreSQL ``LISTEN``/``NOTIFY``: one listening connection per process.

Migration 0012's event trigger notifies :data:`CHANNEL` with ``<task id>:<seq>`` for every
event it writes; PostgreSQL delivers it when the move commits. While anything in this process
watches Tasks of a django store on PostgreSQL, the wake-up poller keeps one :class:`Listener`
running: one thread and one connection of its own (autocommit, ``application_name``
:data:`APPLICATION_NAME`; outside ``DATABASE_THREADS``, counted in
``tools.budget.OWN_CONNECTIONS``) that ``LISTEN``s and hands each ``(task id, seq)`` to the
hub, however many wait. ``EVENT_LISTENER`` says which database or DSN it connects to.

- After ``LISTEN`` it probes once: a ``NOTIFY`` sent through the store's own database (where
  the trigger's come from) must arrive within :data:`PROBE_SECONDS`. Then it is *healthy*: the
  hub beats once at once (what moved before ``LISTEN`` is caught up from the event log) and
  slows its poll to ``EVENT_FALLBACK_POLL_INTERVAL``.
- A probe that never arrives (a pooler in transaction mode drops ``LISTEN`` without a word, or
  ``EVENT_LISTENER`` reaches another database): one warning naming the setting, and this
  process polls — no listener again until the settings change.
- A lost connection (a restart, ``pg_terminate_backend``, a failover): unhealthy at once, so
  the hub polls every ``EVENT_POLL_INTERVAL`` again; it reconnects with backoff
  (:data:`FIRST_RETRY` doubling up to :data:`MAX_RETRY`), and the catch-up beat after the next
  probe finds what moved while it was away. One log line per change of state, none per
  notification; a database that is down is one line, never a traceback.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from ..conf import setting_name, toolnexus_settings
from ..runtime.outages import first_line, log_exception
from ..runtime.registry import PerProcess, Stage
from ..stores import DjangoTaskStore, TaskStore
from .payloads import parse_live_payload, parse_payload

if TYPE_CHECKING:  # psycopg 3 is the "postgres" extra: imported where it is used
    import psycopg

logger = logging.getLogger("toolnexus_django.lifecycle")

#: The channel migration 0012's trigger notifies (its payload: ``<task id>:<seq>``).
CHANNEL = "toolnexus_task_events"
#: How the listener's session shows in ``pg_stat_activity`` (count them by it).
APPLICATION_NAME = "toolnexus-listener"
#: How long the probe ``NOTIFY`` may take to arrive before LISTEN is taken for dropped.
PROBE_SECONDS = 5.0
#: The first wait before reconnecting, doubled after each failure up to MAX_RETRY.
FIRST_RETRY = 0.5
MAX_RETRY = 30.0
#: The longest the listening thread waits before it looks whether it must stop.
WAIT_SLICE = 1.0
#: A connect that hangs, or a peer gone without a word (a cut network), is found in
#: seconds rather than at the kernel's TCP timeout. A DSN's or OPTIONS' own values win.
CONNECT_DEFAULTS: dict[str, Any] = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}
#: psycopg.connect keywords in Django's parameters that are the ORM's (adapters, cursors).
_ORM_ONLY = ("cursor_factory", "context", "prepare_threshold")
WHERE = setting_name("EVENT_LISTENER")


def listened_alias(store: TaskStore) -> str | None:
    """The database alias whose notifications tell ``store``'s moves (a
    django store on PostgreSQL); None for any other store."""
    if not isinstance(store, DjangoTaskStore):
        return None
    try:
        vendor = connections[store.using].vendor
    except Exception:  # an alias not (or no longer) in DATABASES: it is polled
        return None
    return store.using if vendor == "postgresql" else None


@dataclass(frozen=True)
class ListenTarget:
    """Where a listener listens: for the moves of database ``alias`` (the
    store's; the probe is sent through it), connected with ``params``."""

    alias: str
    #: psycopg.connect's keywords (a password among them: never shown).
    params: dict[str, Any] = field(repr=False)
    #: How the log names it.
    shown: str


def target_for(alias: str) -> ListenTarget | None:
    """Where this process listens for the moves of ``alias``, as
    ``EVENT_LISTENER`` says (None: it does not). A value the system checks
    report (E206) is an ``ImproperlyConfigured``."""
    value = toolnexus_settings.EVENT_LISTENER
    if value is False:
        return None
    if value is None or (isinstance(value, str) and value in settings.DATABASES):
        name = alias if value is None else value
        params, shown = alias_params(name), f"database {name!r}"
    elif isinstance(value, str) and value.strip():
        params = dsn_params(value)
        host, port = params.get("host") or "localhost", params.get("port") or 5432
        shown = f"{host}:{port}/{params.get('dbname') or ''}"
    else:
        raise ImproperlyConfigured(f"{WHERE} = {value!r}: None, False, an alias or a DSN")
    params = {**CONNECT_DEFAULTS, **params}
    params.update(application_name=APPLICATION_NAME, autocommit=True)
    return ListenTarget(alias, params, shown)


def alias_params(name: str) -> dict[str, Any]:
    """psycopg.connect's keywords for database ``name`` of DATABASES, as Django connects."""
    wrapper = connections[name]
    if wrapper.vendor != "postgresql":
        raise ImproperlyConfigured(f"{WHERE}: database {name!r} is not PostgreSQL")
    found = wrapper.get_connection_params()
    return {k: v for k, v in found.items() if k not in _ORM_ONLY}


def dsn_params(dsn: str) -> dict[str, Any]:
    """A libpq DSN (``key=value ...`` or a ``postgresql://`` URI) as psycopg.connect's keywords."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        return conninfo_to_dict(dsn)
    except ProgrammingError as e:
        raise ImproperlyConfigured(f"{WHERE} is no alias of DATABASES and no DSN: {e}") from e


class Listener:
    """One thread holding one listening connection (see the module's docstring)."""

    def __init__(
        self,
        target: ListenTarget,
        heard: Callable[[str, int], None],
        changed: Callable[[], None],
        heard_live: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.target = target
        self._heard = heard
        self._changed = changed
        self._heard_live = heard_live
        #: Connected, listening, and the probe came back: notifications arrive.
        self.healthy = False
        #: The probe never came back: this process polls (until the settings change).
        self.refused = False
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="toolnexus-listener", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop listening: the thread closes its connection within WAIT_SLICE."""
        self._stopping.set()

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        delay, down = FIRST_RETRY, False
        try:
            while not self._stopping.is_set():
                try:
                    self._connected(again=down)
                    return  # stopped, or the probe never came back
                except Exception as exc:
                    lost = self.healthy
                    self._set(False)
                    if self._stopping.is_set():
                        return
                    if lost:  # a new outage: its first retry comes soon, and is said
                        delay, down = FIRST_RETRY, False
                    if not down:
                        self._say_down(exc, lost=lost)
                        down = True
                    self._stopping.wait(delay)
                    delay = min(2 * delay, MAX_RETRY)
        finally:
            self._set(False)
            connections.close_all()  # the probe's connection, on this thread

    def _connected(self, *, again: bool) -> None:
        """Connect, LISTEN and probe, then hand notifications over until stopped."""
        import psycopg

        conn = psycopg.connect(**self.target.params)
        try:
            if self._ready(conn, again=again):
                self._serve(conn)
        finally:
            conn.close()

    def _ready(self, conn: psycopg.Connection[Any], *, again: bool) -> bool:
        """LISTEN, then probe: whether notifications arrive here."""
        conn.execute(f"LISTEN {CHANNEL}")
        token = f"probe {uuid.uuid4().hex}"  # no ":": no process takes it for a move
        self._probe(token)
        if not self._probe_arrives(conn, token):
            if not self._stopping.is_set():
                self.refused = True
                logger.warning(
                    "wake-ups by LISTEN/NOTIFY are off in this process: a NOTIFY sent through "
                    "database %r did not arrive on %s within %ss (a connection pooler in "
                    "transaction mode drops LISTEN): set %s to an alias or DSN that reaches "
                    "PostgreSQL directly, or to False; polling every %ss",
                    self.target.alias,
                    self.target.shown,
                    PROBE_SECONDS,
                    WHERE,
                    toolnexus_settings.EVENT_POLL_INTERVAL,
                )
            return False
        self._set(True)
        said = "listening again for task events on %s (catching up from the event log)"
        logger.info(said if again else "listening for task events on %s", self.target.shown)
        return True

    def _probe(self, token: str) -> None:
        """NOTIFY ``token`` through the store's database, as a move's trigger would."""
        connection = connections[self.target.alias]
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, token])
        finally:
            connection.close()

    def _probe_arrives(self, conn: psycopg.Connection[Any], token: str) -> bool:
        deadline = time.monotonic() + PROBE_SECONDS
        while (left := deadline - time.monotonic()) > 0 and not self._stopping.is_set():
            for notice in conn.notifies(timeout=min(left, WAIT_SLICE)):
                if notice.payload == token:
                    return True
                self._hand(notice.payload)
        return False

    def _serve(self, conn: psycopg.Connection[Any]) -> None:
        while not self._stopping.is_set():
            for notice in conn.notifies(timeout=WAIT_SLICE):
                self._hand(notice.payload)

    def _hand(self, payload: str) -> None:
        if self._stopping.is_set():
            return  # stopped (the settings changed, nothing watches): hands nothing more
        parsed = parse_payload(payload)
        if parsed is not None:
            self._heard(*parsed)
        elif self._heard_live is not None and (live := parse_live_payload(payload)) is not None:
            self._heard_live(*live)

    def _set(self, healthy: bool) -> None:
        if healthy != self.healthy:
            self.healthy = healthy
            self._changed()

    def _say_down(self, exc: BaseException, *, lost: bool) -> None:
        what = "lost its connection to" if lost else "cannot connect to"
        message = f"the task-event listener {what} %s; polling every %ss until it is back"
        args = (self.target.shown, toolnexus_settings.EVENT_POLL_INTERVAL)
        import psycopg

        if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
            logger.warning(f"{message}: database unavailable (%s)", *args, first_line(exc))
        else:  # Django's errors (the probe) as every outage is logged; a bug keeps its traceback
            log_exception(logger, message, *args, level=logging.WARNING, exc=exc)


class Listening:
    """This process's listener: at most one, for the first database it is asked for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: Listener | None = None
        #: Why this process does not listen (EVENT_LISTENER cannot be used), said once.
        self._off: str | None = None

    def ensure(
        self,
        alias: str,
        heard: Callable[[str, int], None],
        changed: Callable[[], None],
        heard_live: Callable[[str, int, int], None] | None = None,
    ) -> None:
        """Listen for the moves of ``alias`` unless a listener runs already
        (one per process), one was refused, or EVENT_LISTENER says not to."""
        with self._lock:
            current = self._current
            running = current is not None and (current.alive or current.refused)
            if running or self._off is not None:
                return
            try:
                if importlib.util.find_spec("psycopg") is None:
                    raise ImproperlyConfigured("they need psycopg 3 (the postgres extra)")
                target = target_for(alias)
            except ImproperlyConfigured as e:
                self._off = str(e)
                logger.warning(
                    "wake-ups by LISTEN/NOTIFY are off in this process (%s); polling every %ss",
                    e,
                    toolnexus_settings.EVENT_POLL_INTERVAL,
                )
                return
            if target is None:
                return
            self._current = Listener(target, heard, changed, heard_live)
            self._current.start()

    def current(self) -> Listener | None:
        return self._current

    def stop(self) -> None:
        """Stop listening (nothing watches); a refused listener stays, so this
        process keeps polling rather than probe again."""
        with self._lock:
            current = self._current
            if current is None or current.refused:
                return
            self._current = None
        current.stop()

    def close(self, timeout: float) -> bool:
        """Stop listening, waiting up to ``timeout`` for the connection to close."""
        with self._lock:
            current, self._current = self._current, None
        if current is None:
            return True
        current.stop()
        return current.join(timeout)


#: This process's listener (a new one after a fork; stopped when settings
#: change, the next beat of the poller starts one under the new settings).
_listening = PerProcess(
    "wake-up listener",
    Listening,
    close=lambda listening: listening.close(0),
    stage=Stage.DATABASE,
    stop=lambda listening, left: listening.close(min(left, 2 * WAIT_SLICE)),
)


def listen(
    alias: str,
    heard: Callable[[str, int], None],
    changed: Callable[[], None],
    heard_live: Callable[[str, int, int], None] | None = None,
) -> None:
    """Have this process listen for the moves of ``alias`` (see :meth:`Listening.ensure`):
    ``heard(task id, seq)`` for each, ``changed()`` when it connects or loses its
    connection, ``heard_live(task id, seq, last)`` for each batch of a run's live updates."""
    _listening.get().ensure(alias, heard, changed, heard_live)


def active() -> Listener | None:
    """This process's listener, if it has one."""
    listening = _listening.peek()
    return listening.current() if listening is not None else None


def heard_alias() -> str | None:
    """The database whose moves this process hears now (its listener is healthy)."""
    listener = active()
    return listener.target.alias if listener is not None and listener.healthy else None


def stop_listening() -> None:
    """Nothing watches any more: stop listening (see :meth:`Listening.stop`)."""
    listening = _listening.peek()
    if listening is not None:
        listening.stop()
