"""How many requests of a process wait on a Task at once (blocking sends,
open streams, where each holds a server thread): ``MAX_HELD_REQUESTS``."""

from __future__ import annotations

import threading

from ..conf import toolnexus_settings


class HeldRequests:
    """How many requests of this process are waiting on a Task right now."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    def hold(self) -> Slot | None:
        """A slot, or None when MAX_HELD_REQUESTS are already waiting."""
        limit = toolnexus_settings.MAX_HELD_REQUESTS
        with self._lock:
            if limit is not None and self._count >= int(limit):
                return None
            self._count += 1
        return Slot(self)

    def _release(self) -> None:
        with self._lock:
            self._count = max(0, self._count - 1)


class Slot:
    """One held request; :meth:`release` is idempotent."""

    def __init__(self, owner: HeldRequests) -> None:
        self._owner: HeldRequests | None = owner

    def release(self) -> None:
        owner, self._owner = self._owner, None
        if owner is not None:
            owner._release()

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


held = HeldRequests()
