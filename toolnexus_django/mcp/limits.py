"""``MCP["MAX_CONCURRENT_CALLS"]``: the tools/calls one process runs at once.

A call past the bound is not queued: it gets an ``isError`` result "busy"
at once (and an audit row, reason ``busy``), so a flood of MCP calls never
holds the toolkit's loop nor the database threads of this process."""

from __future__ import annotations

import threading


class InFlight:
    """A counter of calls in flight, bounded by a limit read on each take."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def take(self, limit: int | None) -> bool:
        """Count one more call, unless ``limit`` calls are in flight (None: no limit)."""
        with self._lock:
            if limit is not None and self.count >= limit:
                return False
            self.count += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.count = max(0, self.count - 1)


#: This process's calls in flight (a fork starts with none: the counter is
#: only ever non-zero while a call runs, and calls do not survive a fork).
calls_in_flight = InFlight()
