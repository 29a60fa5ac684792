"""The per-process singletons, in one place.

Several objects exist once per process: the Task store, the conversation
store, the agent runtime, the in-process Tasks backend, the lease keeper, the
wake-up hub, the Agent Card's caches. Each is a :class:`PerProcess`: built on
first use under a lock, built again in a forked child (its parent's threads
and sockets do not cross a fork), and — unless it says otherwise — dropped
(and closed) when the ``TOOLNEXUS`` setting changes, so the next use sees the
new setting (``override_settings``, pytest-django's ``settings``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from ..conf import toolnexus_settings

logger = logging.getLogger(__name__)

T = TypeVar("T")

_all: list[PerProcess[object]] = []
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
    ) -> None:
        self.name = name
        self._factory = factory
        self._close = close
        self.reload = reload
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


def reset_on_reload() -> None:
    with _all_lock:
        singletons = list(_all)
    for singleton in singletons:
        if singleton.reload:
            singleton.reset()


toolnexus_settings.on_reload(reset_on_reload)
