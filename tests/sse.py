"""Reading Server-Sent Events over real HTTP, every read bounded by a deadline."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


# -- a stream's moves and its live updates --------------------------------------------------
#
# A stream of a streamed run shows, between the Task's moves (the Task, then
# one status update per event, each after the artifact updates that came
# with it), the run's *live updates* (toolnexus_django/a2a/liveevents.py):
# chunks of the answer (artifact updates with ``lastChunk: false``) and tool
# calls (``working`` status updates whose message has a data part naming the
# tool). Live updates' SSE ids are ``<seq>.0.<n>``; moves' are ``<seq>`` and
# ``<seq>.<k>``. The helpers below take what a test received — events read by
# :class:`SseStream` (JSON-RPC envelopes, or the HTTP+JSON binding's bare
# StreamResponses), JSON-RPC results (v0.3 or v1.0), or the official SDK's
# protobuf StreamResponses — and split it, keeping each item as it was given.

#: The keys of a tool call's data part in a live status update.
TOOL_KEYS = frozenset({"tool", "callId", "status"})


def result_of(item: Any) -> dict[str, Any]:
    """The StreamResponse (v1.0) or v0.3 result ``item`` carries, as JSON."""
    if hasattr(item, "DESCRIPTOR"):  # a protobuf message: the SDK's StreamResponse
        from google.protobuf.json_format import MessageToDict

        return MessageToDict(item)
    if isinstance(item, dict) and "event" in item and "data" in item:  # an SSE event
        data = item["data"]
        return data["result"] if isinstance(data, dict) and "jsonrpc" in data else data
    return item


def sse_id(item: Any) -> str | None:
    """The SSE id of ``item`` when it is an event read by :class:`SseStream`."""
    if isinstance(item, dict) and "event" in item and "data" in item:
        return item.get("id")
    return None


def ordinal(event_id: str) -> tuple[int, int, int]:
    """An SSE id as a sortable triple: "7" -> (7, 0, 0), "6.1" -> (6, 1, 0),
    "6.0.3" -> (6, 0, 3) (a live update after event 6's messages)."""
    parts = [int(p) for p in event_id.split(".")]
    assert 1 <= len(parts) <= 3, event_id
    seq, k, n = parts + [0] * (3 - len(parts))
    return seq, k, n


def is_live_id(event_id: str) -> bool:
    """Whether ``event_id`` is a live update's (``<seq>.0.<n>``)."""
    parts = event_id.split(".")
    return len(parts) == 3 and parts[1] == "0"


def update_of(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(``"artifact"`` | ``"status"`` | ``"task"`` | ``""``, the update's body), either dialect."""
    for key, kind in (("artifactUpdate", "artifact"), ("statusUpdate", "status"), ("task", "task")):
        if key in result:
            return kind, result[key]
    kind = {"artifact-update": "artifact", "status-update": "status", "task": "task"}
    return kind.get(str(result.get("kind")), ""), result


def text_of(artifact: dict[str, Any]) -> str:
    """The text of an artifact's text parts (v0.3 or v1.0 parts)."""
    return "".join(str(p.get("text") or "") for p in artifact.get("parts") or ())


def live_kind(item: Any) -> str | None:
    """``"chunk"`` (a chunk of the answer), ``"tool"`` (a tool call), or
    None (a move of the Task)."""
    kind, body = update_of(result_of(item))
    if kind == "artifact":
        return None if body.get("lastChunk", False) else "chunk"
    if kind == "status":
        status = body.get("status") or {}
        if status.get("state") not in ("working", "TASK_STATE_WORKING") or body.get("final"):
            return None
        parts = (status.get("message") or {}).get("parts") or ()
        data = [p["data"] for p in parts if isinstance(p.get("data"), dict)]
        if any(TOOL_KEYS <= d.keys() for d in data):
            return "tool"
    return None


@dataclass(frozen=True)
class Split:
    """A stream's items, split into its moves and its live updates."""

    items: list[Any]

    @property
    def moves(self) -> list[Any]:
        return [i for i in self.items if live_kind(i) is None]

    @property
    def live(self) -> list[Any]:
        return [i for i in self.items if live_kind(i) is not None]

    @property
    def chunks(self) -> list[dict[str, Any]]:
        """The live chunks' artifact update bodies."""
        return [update_of(result_of(i))[1] for i in self.items if live_kind(i) == "chunk"]

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The data parts of the live tool-call updates (``tool``, ``callId``, ``status``...)."""
        out = []
        for item in self.items:
            if live_kind(item) == "tool":
                message = update_of(result_of(item))[1]["status"]["message"]
                out += [p["data"] for p in message["parts"] if isinstance(p.get("data"), dict)]
        return out

    def streamed_text(self) -> str:
        """The live chunks assembled: ``append: false`` restarts, ``append: true`` appends."""
        text = ""
        for chunk in self.chunks:
            text = (text if chunk.get("append", False) else "") + text_of(chunk["artifact"])
        return text

    def final_event_starts(self) -> int:
        """The index of the first message of the final event (its artifact
        updates, then its status: the stream's last item)."""
        assert self.items and live_kind(self.items[-1]) is None, "the stream ends on a move"
        start = len(self.items) - 1
        while start > 0 and update_of(result_of(self.items[start - 1]))[0] == "artifact":
            if live_kind(self.items[start - 1]) is not None:
                break
            start -= 1
        return start

    def check(self) -> Split:
        """Every SSE id (where the items have them) says what the content
        says (live or move), the ids increase, and the stream ends on a move
        (so every live update came before the final event); returns itself."""
        ids = [(sse_id(i), i) for i in self.items]
        for event_id, item in ids:
            if event_id is not None:
                assert is_live_id(event_id) == (live_kind(item) is not None), (event_id, item)
        order = [ordinal(event_id) for event_id, _ in ids if event_id is not None]
        assert order == sorted(order) and len(set(order)) == len(order), order
        if self.items:
            self.final_event_starts()
        return self

    def assert_answer_streamed(self, *, required: bool) -> None:
        """The live chunks assemble to exactly the final artifact's text and
        carry its artifactId; every live update came before the final event.

        ``required=False``: a stream that showed no chunk at all passes too.
        A stream that reads none of a run's chunks before the run's final
        event shows none (follow.py sends "the rest" as one more chunk only
        to a client that holds some of the text): for an answer the model
        gives at once, whether a stream shows chunks is a matter of timing.
        ``required=True`` for a model that writes its answer over a while
        (the demo's offline model, word by word)."""
        self.check()
        final = [
            update_of(result_of(i))[1]["artifact"]
            for i in self.items[self.final_event_starts() :]
            if update_of(result_of(i))[0] == "artifact"
        ]
        assert final, "the final event carries the answer"
        answer = final[-1]
        if not required and not self.chunks:
            return
        assert self.chunks, "the answer was streamed"
        assert {c["artifact"]["artifactId"] for c in self.chunks} == {answer["artifactId"]}
        assert self.streamed_text() == text_of(answer)


def split(items: list[Any]) -> Split:
    """``items`` (what a stream showed, see above) split into moves and live
    updates, checked as :meth:`Split.check` says."""
    return Split(list(items)).check()
