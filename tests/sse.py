"""Reading Server-Sent Events over real HTTP, every read bounded by a deadline."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx


class SseStream:
    """One SSE response read event by event, every read bounded by a deadline."""

    def __init__(self, response: httpx.Response, deadline: float) -> None:
        self.response = response
        self.deadline = deadline
        self.lines = response.iter_lines()
        self.comments = 0

    @property
    def is_sse(self) -> bool:
        return self.response.headers["content-type"].startswith("text/event-stream")

    def next(self) -> dict[str, Any] | None:
        """The next event as ``{"event": name, "data": parsed JSON, "id": its
        id or None}``; None at the end of the stream."""
        name, data, event_id = "message", [], None
        for line in self.lines:
            if time.monotonic() > self.deadline:
                raise AssertionError("the stream ran past its deadline")
            if not line:
                if data:
                    return {"event": name, "data": json.loads("\n".join(data)), "id": event_id}
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "id":
                event_id = value
            elif key == "data":
                data.append(value)
        return None

    def rest(self) -> list[dict[str, Any]]:
        events = []
        while (event := self.next()) is not None:
            events.append(event)
        return events


@contextmanager
def open_stream(
    url: str,
    method: str,
    params: dict[str, Any],
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 20,
) -> Iterator[SseStream]:
    payload = {"jsonrpc": "2.0", "id": "s-1", "method": method, "params": params}
    with (
        httpx.Client(timeout=httpx.Timeout(timeout)) as client,
        client.stream(
            "POST", url, json=payload, headers={"Accept": "text/event-stream", **(headers or {})}
        ) as response,
    ):
        assert response.status_code == 200
        yield SseStream(response, time.monotonic() + timeout)
