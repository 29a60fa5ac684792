"""The per-process singletons, in one place.

Several objects exist once per process: the Task store, the conversation
store, the agent runtime, the in-process Tasks backend, the lease keeper, the
wake-up hub, the Agent Card's caches. Each is a :class:`PerProcess`: built on
first use under a lock, built again in a forked child (its parent's threads
and sockets do not cross a fork), and — unless it says otherwise — dropped
(and closed) when the ``TOOLNEXUS`` setting changes, so the next use sees the
new setting (``override_settings``, pytest-django's ``settings``).

Some of them run something (a thread, a loop, a pool): those say at which
:class:`Stage` :func:`toolnexus_django.runtime.stop` stops them and how, and
whether :func:`toolnexus_django.runtime.start` builds them up front. What is
not a singleton but must still be told (the blocking waits) is a
:class:`Hook`. Both live in the one list :func:`pieces` walks.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from enum import IntEnum
from typing import Generic, Protocol, TypeVar

from ..conf import toolnexus_settings

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Stage(IntEnum):
    """The order :func:`toolnexus_django.runtime.stop` stops pieces in."""

    #: Blocking sends and streams end; no new work is taken.
    WAITS = 10
    #: The sweep stops first: it would recover (so start) Tasks.
    SWEEP = 20
    #: Running Tasks finish, within what is left of the grace.
    RUNS = 30
    #: What did not finish is handed back; the lease keeper stops.
    LEASES = 40
    #: Push deliveries in flight finish (what is left of the grace).
    PUSH = 50
    #: The runtime loop (and its toolkit), then the tool threads.
    LOOP = 60
    TOOLS = 70
    #: Last: every stage before may still write.
    DATABASE = 80


class Piece(Protocol):
    """What :func:`pieces` lists: a named part that starts and stops."""

    name: str
    stage: Stage | None

    def start_piece(self) -> None: ...

    def stop_piece(self, timeout: float) -> bool: ...


_all: list[PerProcess[object]] = []
_hooks: list[Hook] = []
_all_lock = threading.Lock()


class PerProcess(Generic[T]):
    """``factory()``'s result, one per process (see the module's docstring)."""

    def __init__(
        self,
        name: str,
        factory: Callable[[], T],
        *,
        close: Callable[[T], object] | None = None,
        reload: bool = True,
        stage: Stage | None = None,
        stop: Callable[[T, float], bool | None] | None = None,
        eager: bool = False,
    ) -> None:
        self.name = name
        self._factory = factory
        self._close = close
        self.reload = reload
        #: When runtime.stop() stops it (None: state, left alone), and how:
        #: ``stop(value, seconds left)``, False if it did not stop in time.
        self.stage = stage
        self._stop = stop
        #: Built by runtime.start() rather than on first use.
        self.eager = eager
        self._lock = threading.Lock()
        self._value: T | None = None
        self._pid = 0
        with _all_lock:
            _all.append(self)  # type: ignore[arg-type]

    def get(self) -> T:
        value, pid = self._value, self._pid
        if value is not None and pid == os.getpid():
            return value
        with self._lock:
            if self._value is None or self._pid != os.getpid():
                self._value = self._factory()
                self._pid = os.getpid()
            return self._value

    def peek(self) -> T | None:
        """The value if this process has built it, without building it."""
        return self._value if self._pid == os.getpid() else None

    def pop(self) -> T | None:
        """Forget this process's value and hand it back (not closed)."""
        with self._lock:
            value = self._value if self._pid == os.getpid() else None
            self._value, self._pid = None, 0
        return value

    def discard(self, value: T) -> bool:
        """Forget ``value`` if it is still this process's (not closed): for a
        value found broken, so the next :meth:`get` builds a new one."""
        with self._lock:
            if self._value is not value:
                return False
            self._value, self._pid = None, 0
        return True

    def reset(self) -> None:
        """Forget this process's value, closing it."""
        value = self.pop()
        if value is not None and self._close is not None:
            try:
                self._close(value)
            except Exception:  # a failed close must not stop the others
                logger.exception("closing %s failed", self.name)

    def start_piece(self) -> None:
        if self.eager:
            self.get()

    def stop_piece(self, timeout: float) -> bool:
        """Stop and forget this process's value (within ``timeout`` seconds):
        whether it stopped in time. Not built: nothing to do."""
        value = self.pop()
        if value is None:
            return True
        if self._stop is not None:
            return self._stop(value, max(0.0, timeout)) is not False
        if self._close is not None:
            self._close(value)
        return True


class Hook:
    """Something to tell when the process starts and stops that is not a
    per-process value (the blocking waits' flag)."""

    def __init__(
        self,
        name: str,
        stage: Stage,
        *,
        start: Callable[[], object] | None = None,
        stop: Callable[[float], bool | None] | None = None,
    ) -> None:
        self.name = name
        self.stage: Stage | None = stage
        self._start = start
        self._stop = stop
        with _all_lock:
            _hooks.append(self)

    def start_piece(self) -> None:
        if self._start is not None:
            self._start()

    def stop_piece(self, timeout: float) -> bool:
        return self._stop is None or self._stop(max(0.0, timeout)) is not False


def pieces() -> list[Piece]:
    """Every registered piece that starts or stops, in :class:`Stage` order."""
    with _all_lock:
        found: list[Piece] = [*_all, *_hooks]
    staged = [piece for piece in found if piece.stage is not None]
    return sorted(staged, key=lambda piece: piece.stage or 0)


def reset_on_reload() -> None:
    with _all_lock:
        singletons = list(_all)
    for singleton in singletons:
        if singleton.reload:
            singleton.reset()


toolnexus_settings.on_reload(reset_on_reload)
