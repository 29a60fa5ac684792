"""A run through toolnexus's streaming loop (``Client.stream``), its events
handed on as they come: text deltas, ``tool_call``, ``pending``,
``tool_result``, ``usage``. The run's result is the one its ``done`` event
carries, the same ``RunResult`` ``Client.run`` returns.

toolnexus's ``stream`` takes no ``history=`` (``run`` does): with an ``id`` it
loads the history from the client's ``ConversationStore``. The workaround
here: a shallow copy of the client whose store holds this run's history
only (:class:`OneRun`), so the conversation is this app's as before.

A client that cannot stream (toolnexus's ``create_in_process_client``: its
transport raises ``NotImplementedError`` before anything is sent) runs with
``Client.run``, as before; it is remembered, so later runs go there at once.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable
from typing import Any

import toolnexus

#: The conversation id a streamed run's :class:`OneRun` store answers to.
RUN_ID = "toolnexus-django-run"

OnEvent = Callable[[dict[str, Any]], None]

#: Clients found not to stream (by identity; forgotten with the client).
_not_streaming: weakref.WeakSet[Any] = weakref.WeakSet()


class OneRun:
    """A toolnexus ``ConversationStore`` holding one run's history: what
    ``stream(id=RUN_ID)`` loads; what it saves at the end is the run's
    result's transcript, which the runner keeps itself."""

    def __init__(self, history: list[dict[str, Any]] | None) -> None:
        self.history = list(history) if history else None

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        return list(self.history) if self.history else None

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
        return None


def can_stream(client: Any) -> bool:
    """Whether ``client`` is a toolnexus client not found unable to stream."""
    return callable(getattr(client, "stream", None)) and client not in _not_streaming


async def streamed_run(
    client: toolnexus.Client,
    prompt: Any,
    toolkit: Any,
    *,
    history: list[dict[str, Any]] | None,
    cancel: Any,
    on_event: OnEvent,
    origin: Any = None,
) -> toolnexus.RunResult:
    """One run of ``prompt`` through ``client.stream``, each event but the
    last handed to ``on_event`` (on this loop, in order); the ``done``
    event's result. Falls back to ``client.run`` for a client that cannot
    stream (``origin``: the client ``client`` is a copy of, remembered as such)."""
    origin = client if origin is None else origin
    if not can_stream(origin):
        return await client.run(prompt, toolkit, history=history, cancel=cancel)
    streaming = copy.copy(client)
    streaming.store = OneRun(history)
    result: toolnexus.RunResult | None = None
    began = False
    try:
        async for event in streaming.stream(prompt, toolkit, id=RUN_ID, cancel=cancel):
            began = True
            if event.get("type") == "done":
                result = event["result"]
            else:
                on_event(event)
    except NotImplementedError:
        if began:
            raise
        _not_streaming.add(origin)
        return await client.run(prompt, toolkit, history=history, cancel=cancel)
    if result is None:
        raise RuntimeError("the model's stream ended without a result")
    return result
