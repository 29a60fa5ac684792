"""A model running in this process that streams: toolnexus's in-process
model (``create_in_process_client``) refuses a streaming call, so a run
streamed with it fails; here its whole answer is sent as the events of a
stream, word by word, optionally at a reading pace.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import toolnexus

from .sseanswer import SSEResponse, sse_of

#: The base URL the client is given. Never dialled (the transport answers
#: every call), but the client builds URLs from it: ``.invalid`` (RFC 2606)
#: can never resolve. toolnexus's own sentinel, which is private.
IN_PROCESS_BASE_URL = "http://in-process.invalid/v1"


class StreamingInProcessTransport:
    """toolnexus's ``InProcessTransport`` for ``generate`` (a model in this
    process), whose streaming call (``open``) sends the answer as OpenAI
    server-sent events, a word each, ``pause`` seconds apart. Works around
    toolnexus: its in-process transport raises NotImplementedError there."""

    def __init__(self, generate: Callable[[dict[str, Any]], Any], pause: float = 0.0) -> None:
        self._inner = toolnexus.InProcessTransport(generate)
        self.pause = pause

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        return self._inner.post(url, headers, payload, timeout)

    def open(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> SSEResponse:
        # generate runs here, as post runs it (toolnexus's own request and
        # answer assembly, not a copy); its answer is whole, so only the
        # pause between words makes it arrive as a real stream would.
        answer = self._inner.post(url, headers, payload, timeout)
        return SSEResponse(sse_of(answer, "openai", words=True), self.pause)


def in_process_client(
    *,
    model: str,
    generate: Callable[[dict[str, Any]], Any],
    words_per_second: float | None = None,
    **options: Any,
) -> toolnexus.Client:
    """``toolnexus.create_in_process_client``, whose runs may also stream:
    ``generate(request)`` answers ``{"content": ...}`` or ``{"tool_calls":
    [{"name": ..., "arguments": {...}}]}``; a streamed answer's text comes a
    word at a time, ``words_per_second`` of them (None or 0: at once)."""
    if not callable(generate):
        raise TypeError("in_process_client needs a callable `generate`")
    if words_per_second is not None and not (
        math.isfinite(words_per_second) and words_per_second >= 0
    ):
        raise ValueError(f"words_per_second must be a number >= 0, not {words_per_second!r}")
    for reserved in ("base_url", "api_key", "style", "http_transport"):
        if reserved in options:
            raise TypeError(f"in_process_client does not take `{reserved}`: there is no wire")
    # As create_in_process_client: no retries by default (there is no wire to
    # fail for a moment; what generate raises it raises again), and a key
    # that is never sent, so that none is looked for in the environment
    # (where the client fails when it finds none).
    options.setdefault("retries", 0)
    pause = 1 / words_per_second if words_per_second else 0.0
    return toolnexus.create_client(
        base_url=IN_PROCESS_BASE_URL,
        style="openai",
        api_key="in-process",
        model=model,
        http_transport=StreamingInProcessTransport(generate, pause),
        **options,
    )
