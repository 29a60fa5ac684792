"""Reading a streamed Task's live updates as a client does, whatever the binding:
each stream message becomes a :class:`Seen` (JSON-RPC v0.3 and v1.0, HTTP+JSON,
gRPC's StreamResponse as JSON), and :class:`Assembly` builds the answer from
its chunks the way a client applies ``append`` (``append: false`` starts the
artifact anew). Used by tests/serving/test_live_streams.py and
tests/a2a/test_sdk_live_streams.py."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import toolnexus

from tests.fakes import Raw, Style

#: A paced answer of 20 words: 20 pieces on the model's stream.
TWENTY_WORDS = (
    "The claim for the taxi from the airport is filed and the receipt "
    "is attached to it for the reviewer to see today."
)


@dataclass(frozen=True)
class Seen:
    """One stream message, in terms every binding shares.

    ``kind``: ``task``, ``status``, ``chunk`` (an artifact update with
    ``lastChunk`` false: the answer as it is written) or ``artifact`` (the
    final, whole one). ``state`` in v0.3's words (``working``); ``text`` the
    chunk's or artifact's text, or the status message's first text part;
    ``tool`` a status message's data part, when it has one."""

    kind: str
    id: str | None = None
    state: str | None = None
    text: str | None = None
    artifact_id: str | None = None
    append: bool = False
    last_chunk: bool = False
    tool: dict[str, Any] | None = None
    raw: Any = field(default=None, repr=False, compare=False)


def v03_state(state: str) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` -> ``input-required`` (v0.3 names as is)."""
    return state.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _texts(parts: list[dict[str, Any]]) -> str:
    return "".join(str(p["text"]) for p in parts if "text" in p)


def _tool(parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A status message's data part naming a tool call, if it has one."""
    for part in parts:
        data = part.get("data")
        if isinstance(data, dict) and {"tool", "callId", "status"} <= data.keys():
            return data
    return None


def seen_of(result: dict[str, Any], event_id: str | None = None) -> Seen:
    """A stream message's result (v0.3 with ``kind``, or a v1.0 StreamResponse
    as JSON: JSON-RPC's result, HTTP+JSON's event, gRPC's message as a dict)."""
    if "kind" in result:  # v0.3
        kind = result["kind"]
        if kind == "task":
            return Seen("task", event_id, result["status"]["state"], raw=result)
        if kind == "status-update":
            status = result["status"]
            parts = (status.get("message") or {}).get("parts") or []
            return Seen(
                "status",
                event_id,
                status["state"],
                text=_texts(parts) or None,
                tool=_tool(parts),
                raw=result,
            )
        assert kind == "artifact-update", result
        return _artifact(result, event_id)
    if "task" in result:
        return Seen("task", event_id, v03_state(result["task"]["status"]["state"]), raw=result)
    if "statusUpdate" in result:
        status = result["statusUpdate"]["status"]
        parts = (status.get("message") or {}).get("parts") or []
        return Seen(
            "status",
            event_id,
            v03_state(status["state"]),
            text=_texts(parts) or None,
            tool=_tool(parts),
            raw=result,
        )
    assert "artifactUpdate" in result, result
    return _artifact(result["artifactUpdate"], event_id)


def _artifact(update: dict[str, Any], event_id: str | None) -> Seen:
    artifact = update["artifact"]
    last = bool(update.get("lastChunk", False))
    return Seen(
        "artifact" if last else "chunk",
        event_id,
        text=_texts(artifact.get("parts") or []),
        artifact_id=artifact.get("artifactId"),
        append=bool(update.get("append", False)),
        last_chunk=last,
        raw=update,
    )


def seen_sse(events: list[dict[str, Any]], *, jsonrpc: bool = True) -> list[Seen]:
    """SSE events (tests/sse.py) as :class:`Seen`: JSON-RPC's (the result in
    an envelope) or HTTP+JSON's (the bare StreamResponse)."""
    return [seen_of(e["data"]["result"] if jsonrpc else e["data"], e["id"]) for e in events]


class Assembly:
    """The answer as a client builds it from artifact updates: ``append:
    false`` (re)starts the artifact, ``append: true`` adds to it."""

    def __init__(self, *, chunks_only: bool = False) -> None:
        self.chunks_only = chunks_only
        self.texts: dict[str, str] = {}
        self.snapshots: list[str] = []  # the artifact's text after each update

    def take(self, seen: Seen) -> None:
        if seen.kind not in ("chunk", "artifact"):
            return
        if seen.kind == "artifact" and self.chunks_only:
            return
        key = str(seen.artifact_id)
        if seen.append:
            assert key in self.texts, f"an append to an artifact never started: {seen}"
            self.texts[key] += seen.text or ""
        else:
            self.texts[key] = seen.text or ""
        self.snapshots.append(self.texts[key])

    def feed(self, seen: list[Seen]) -> Assembly:
        for item in seen:
            self.take(item)
        return self

    def text(self) -> str:
        assert len(self.texts) <= 1, f"more than one artifact: {self.texts}"
        return next(iter(self.texts.values()), "")


def chunks(seen: list[Seen]) -> list[Seen]:
    return [s for s in seen if s.kind == "chunk"]


def finals(seen: list[Seen]) -> list[Seen]:
    return [s for s in seen if s.kind == "artifact"]


def tool_updates(seen: list[Seen]) -> list[tuple[str, str]]:
    """(tool, status) of every tool-call status update, in order."""
    return [(s.tool["tool"], s.tool["status"]) for s in seen if s.kind == "status" and s.tool]


def states(seen: list[Seen]) -> list[str]:
    return [f"{s.kind}:{s.state}" for s in seen if s.kind in ("task", "status") and not s.tool]


# -- messages --------------------------------------------------------------------------


def v03_message(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **fields,
    }


def v1_message(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **fields,
    }


# -- models ----------------------------------------------------------------------------


def json_answer(style: Style, text: str) -> Raw:
    """``text`` as a model that does not stream answers a streaming request:
    one JSON body, ``application/json``."""
    if style == "anthropic":
        body: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 11, "output_tokens": 7},
        }
    else:
        message = {"role": "assistant", "content": text}
        body = {
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
    return Raw(json.dumps(body).encode(), content_type="application/json")


#: What :func:`unstreamable_client`'s model answers, whatever it is asked.
IN_PROCESS_ANSWER = "Answered whole by a model in this process."


def unstreamable_client() -> toolnexus.Client:
    """A ``CLIENT`` factory: toolnexus's own in-process client, which cannot stream."""
    return toolnexus.create_in_process_client(
        model="in-process", generate=lambda request: {"content": IN_PROCESS_ANSWER}
    )
