"""What a streaming method returns: :class:`EventStream`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..observability import metrics
from ..stores import TaskStore
from ..stores.base import Task
from . import follow
from .dialects import Dialect


@dataclass
class EventStream:
    """A streaming result: the messages of :func:`follow.follow` (a thread
    waits) or :func:`follow.afollow` (a coroutine waits), each one JSON-RPC
    result sent as one SSE event; ``None`` asks for a keep-alive comment.
    ``close()`` must be called however the stream ends (it frees the
    held-request slot, if it took one)."""

    store: TaskStore
    first: Task | None  # None once handed to its follower: an idle stream keeps no copy
    dialect: Dialect
    history_length: int | None = None
    after: follow.Position | None = None
    slot: follow.Slot | None = field(default=None, repr=False)
    _counted: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        self._counted = True  # toolnexus_streams_open, until close()
        metrics.stream_opened()

    def events(self) -> Iterator[follow.Message | None]:
        return follow.follow(
            self.store, self._hand_over(), self.dialect,
            history_length=self.history_length, after=self.after,
        )  # fmt: skip

    def aevents(
        self, run_sync: Callable[..., Any], until: Any = None
    ) -> AsyncGenerator[follow.Message | None, None]:
        return follow.afollow(
            self.store, self._hand_over(), self.dialect, run_sync,
            history_length=self.history_length, after=self.after, until=until,
        )  # fmt: skip

    def _hand_over(self) -> Task:
        first, self.first = self.first, None
        assert first is not None, "this stream is followed already"
        return first

    def close(self) -> None:
        if self.slot is not None:
            self.slot.release()
        if self._counted:
            self._counted = False
            metrics.stream_closed()
