"""A real local HTTP server that plays the LLM for tests.

:class:`FakeLLM` listens on ``127.0.0.1`` (an ephemeral port) and answers the two wire
shapes toolnexus's client speaks:

* ``style="openai"``: ``POST /v1/chat/completions`` -> ``{"choices": [{"message": ...}], "usage"}``
* ``style="anthropic"``: ``POST /v1/messages`` -> ``{"content": [blocks], "usage"}``

``fake.url`` (``http://127.0.0.1:PORT/v1``) works as ``base_url`` for both client styles.
A POST to the other style's endpoint answers 404 with a message saying so, so a test that
wired the wrong style fails loudly instead of hanging or parsing garbage.

Replies are scripted with six small value objects, consumed one per LLM call:

* :class:`Text` -- a final assistant message;
* :class:`ToolCall` -- one assistant turn calling one tool (or several, :meth:`ToolCall.many`);
* :class:`Fail` -- an HTTP error status with a body;
* :class:`Raw` -- these exact bytes, whatever they are (garbage, the wrong shape, a huge body);
* :class:`Hang` -- hold the request open until :meth:`FakeLLM.release` / :meth:`FakeLLM.stop`;
* :class:`Trickle` -- answer, but one byte at a time (the body, or the headers too).

Which reply answers a request, first match wins:

1. ``fake.respond(body)`` when set (return ``None`` to fall through);
2. the keyed scripts registered with :meth:`FakeLLM.on`, FIFO per marker, for a request whose
   first user message text contains the marker (markers tried in registration order; a marker
   whose script is used up no longer matches);
3. the shared queue filled by :meth:`FakeLLM.push`, FIFO;
4. ``fake.default`` (``Text("done")`` unless changed).

Streaming. A request whose body has ``"stream": true`` gets its :class:`Text` or
:class:`ToolCall` as server-sent events (``Content-Type: text/event-stream``, HTTP/1.1
chunked, one chunk written and flushed per event, then the connection closes), in the
wire shape toolnexus's streaming client reads:

* openai: ``data: {chunk}`` per delta -- a ``role`` delta, then ``delta.content`` per text
  piece, or per call a ``delta.tool_calls`` entry (``index``, ``id``, ``function.name``)
  followed by its ``function.arguments`` in pieces -- then a ``finish_reason`` chunk, the
  usage chunk ``{"choices": [], "usage"}`` (only when the body asks with
  ``stream_options.include_usage``, as toolnexus does), then ``data: [DONE]``;
* anthropic: ``event: <type>`` / ``data: {json}`` for ``message_start`` (input tokens),
  per block ``content_block_start`` / ``content_block_delta`` (``text_delta`` or
  ``input_json_delta``) / ``content_block_stop``, then ``message_delta`` (``stop_reason``
  ``"tool_use"`` or ``"end_turn"``, output tokens) and ``message_stop``.

Text (and a call's JSON arguments) go out in word-sized pieces that keep their whitespace
(:func:`text_pieces`: ``"Done. Filed"`` -> ``"Done."``, ``" Filed"``), so the pieces join to
exactly the scripted text. Each piece waits ``pace`` seconds before it is written -- the
reply's own ``pace``, else ``fake.stream_pace`` (``FakeLLM(stream_pace=...)``, default 0):
``pace=1/20`` is a 20 tokens/s model. The other replies mean the same for a streamed
request: :class:`Fail` answers its status before any stream, :class:`Raw` its bytes,
:class:`Hang` holds and then streams its answer, :class:`Trickle` sends the whole event
stream a byte at a time. :meth:`FakeLLM.stop` cuts a paced stream short; a client that
hangs up mid-stream is counted in :attr:`FakeLLM.hung_up` once a write fails. A request
without ``"stream": true`` is answered with one JSON body, as above.

Every POST is recorded in ``fake.requests``, streamed or not. All state sits behind one
lock and one :class:`threading.Condition`; every wait has a deadline.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, TypeAlias
from urllib.parse import urlsplit

Style = Literal["openai", "anthropic"]

#: Token usage reported by default for every scripted answer: (prompt/input, completion/output).
DEFAULT_USAGE: tuple[int, int] = (10, 5)

_HOST = "127.0.0.1"


# --------------------------------------------------------------------------- #
# Scripted replies
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Text:
    """A final assistant message (``finish_reason="stop"`` / ``stop_reason="end_turn"``).

    ``pace``: seconds each piece waits before it is written when the request streams
    (``None``: ``fake.stream_pace``); ``pace=1/50`` is a 50 tokens/s model.
    """

    text: str
    usage: tuple[int, int] = DEFAULT_USAGE
    pace: float | None = None

    def __post_init__(self) -> None:
        _check_pace(self.pace)


#: One call for :meth:`ToolCall.many`: a ToolCall, ``(name, args)`` or ``(name, args, id)``.
_CallSpec: TypeAlias = (
    "ToolCall | tuple[str, Mapping[str, Any]] | tuple[str, Mapping[str, Any], str]"
)


@dataclass(frozen=True)
class ToolCall:
    """One assistant turn that calls the tool ``name`` with ``args``.

    ``id`` is the tool-call id put on the wire; ``None`` generates a unique one
    (``call_fake_<response>_<index>`` for openai, ``toolu_fake_<response>_<index>``
    for anthropic). For several calls in one turn use :meth:`many`; ``also`` carries the
    calls after the first. ``pace`` is as for :class:`Text`: the wait before each streamed
    piece (a call's opening and its argument pieces) of the turn.
    """

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    usage: tuple[int, int] = DEFAULT_USAGE
    also: tuple[ToolCall, ...] = ()
    pace: float | None = None

    def __post_init__(self) -> None:
        _check_pace(self.pace)

    @classmethod
    def many(
        cls,
        calls: Iterable[_CallSpec],
        *,
        usage: tuple[int, int] = DEFAULT_USAGE,
        pace: float | None = None,
    ) -> ToolCall:
        """One turn calling several tools: ``ToolCall.many([("a", {...}), ("b", {...}, "id")])``."""
        items = [c if isinstance(c, ToolCall) else ToolCall(*c) for c in calls]
        if not items:
            raise ValueError("ToolCall.many needs at least one call")
        first, *rest = items
        return ToolCall(
            first.name,
            first.args,
            first.id,
            usage,
            tuple(replace(c, also=()) for c in rest),
            pace,
        )

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """Every call in this turn, in order (each without ``also``)."""
        return (replace(self, also=()), *self.also)


@dataclass(frozen=True)
class Fail:
    """Answer with HTTP ``status`` and ``body``.

    A ``str`` body is sent as ``text/plain``; a mapping is sent as JSON. ``headers`` are
    added to the response (e.g. ``{"Retry-After": "0"}``).
    """

    status: int = 500
    body: str | Mapping[str, Any] = "fake-llm failure"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hang:
    """Hold the request open until :meth:`FakeLLM.release` or :meth:`FakeLLM.stop`.

    Once released the request answers ``then`` -- or, when ``then`` is ``None``, whatever
    ``fake.default`` is at that moment. If nothing releases it within ``max_seconds``, it
    answers HTTP 500 (so a forgotten Hang never wedges a test run).
    """

    max_seconds: float = 30.0
    then: Reply | None = None


@dataclass(frozen=True)
class Raw:
    """Answer with exactly ``body`` (HTTP ``status``, ``content_type``): bytes that are not
    UTF-8, JSON of the wrong shape, a body larger than the server reads. ``sized=False``
    sends no Content-Length: the body ends when the connection closes."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    sized: bool = True


@dataclass(frozen=True)
class Trickle:
    """Answer ``then`` (``None``: ``fake.default``) over HTTP/1.1, one byte every ``every``
    seconds: the status line and headers at once, then the body -- or, with ``headers=True``,
    the headers a byte at a time too. It stops after ``max_seconds`` (closing the connection
    mid-answer), at :meth:`FakeLLM.stop`, or when the client hangs up (counted in
    :attr:`FakeLLM.hung_up`)."""

    every: float = 0.2
    then: Text | ToolCall | Fail | Raw | None = None
    headers: bool = False
    max_seconds: float = 30.0


Reply: TypeAlias = Text | ToolCall | Fail | Hang | Raw | Trickle


def _check_pace(pace: float | None) -> None:
    if pace is not None and not pace >= 0:
        raise ValueError(f"pace is seconds per piece (>= 0), not {pace!r}")


def text_pieces(text: str) -> list[str]:
    """``text`` cut into the word-sized pieces a stream sends, each keeping the whitespace
    before it (trailing whitespace is a piece of its own): ``"Done. Filed"`` ->
    ``["Done.", " Filed"]``. The pieces join to exactly ``text``; ``""`` has none."""
    return re.findall(r"\s*\S+|\s+\Z", text)


# --------------------------------------------------------------------------- #
# Recorded requests
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class RecordedRequest:
    """One POST the fake received.

    ``headers`` has lowercased keys; ``body`` is the parsed JSON (``None`` if it was not
    JSON); ``first_user_text`` is what keyed scripts match against (see
    :func:`first_user_text`).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    first_user_text: str


def _text_of(content: Any) -> str | None:
    """Text of a message ``content``: the string itself, or its joined ``text`` parts/blocks.

    ``None`` when a list content carries no text part at all (e.g. only ``tool_result``).
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        ]
        return "\n".join(texts) if texts else None
    return None


def first_user_text(body: Any, style: Style) -> str:
    """The text of the first user message of a request body ("" when there is none).

    openai: the first message with role ``user`` (string content, or its ``text`` parts).
    anthropic: the first ``user`` message whose content is a string or has ``text`` blocks;
    user messages that only carry ``tool_result`` blocks are skipped.
    """
    messages = body.get("messages") if isinstance(body, Mapping) else None
    if not isinstance(messages, list):
        return ""
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        text = _text_of(message.get("content"))
        if style == "openai":
            return text or ""
        if text is not None:
            return text
    return ""


def _style_for_path(path: str) -> Style | None:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    return None


# --------------------------------------------------------------------------- #
# The server
# --------------------------------------------------------------------------- #


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's backlog of 5 drops connections under a few dozen
    # concurrent model calls (each retry costs the client about a second).
    request_queue_size = 128
    fake: FakeLLM

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The client may have gone away (timed out on a Hang): writing then fails with
        # BrokenPipe/ConnectionReset. That is expected; don't spray tracebacks.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "fake-llm/1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/":
            self._send(200, b"fake-llm", "text/plain; charset=utf-8")
        else:
            self._send(404, b"fake-llm: not found", "text/plain; charset=utf-8")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        answer = self.server.fake._answer(urlsplit(self.path).path, headers, raw)
        if isinstance(answer, _Stream):
            self._send_stream(answer)
            return
        status, payload, content_type, extra, *trickle = answer
        if trickle:
            lines = [f"Content-Length: {len(payload)}"]
            lines += [f"{k}: {v}" for k, v in extra.items() if extra is not _UNSIZED]
            wire = self._head(status, content_type, lines)
            self.server.fake._trickle(self.wfile.write, wire, payload, trickle[0])
            self.close_connection = True
            return
        self._send(status, payload, content_type, extra)

    def _head(self, status: int, content_type: str, lines: list[str]) -> bytes:
        """An HTTP/1.1 status line and headers, written by hand (for paced answers)."""
        head = [f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}"]
        head += [f"Server: {self.version_string()}", f"Content-Type: {content_type}", *lines]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")

    def _send_stream(self, stream: _Stream) -> None:
        """Write ``stream`` as HTTP/1.1 chunks, one per beat, each flushed at once."""
        self.close_connection = True
        fake = self.server.fake
        lines = ["Transfer-Encoding: chunked", "Cache-Control: no-cache", "Connection: close"]
        try:
            # No Nagle: a paced piece leaves now, not when the previous one is acked.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.wfile.write(self._head(200, _SSE, lines))
            for delay, data in stream.beats:
                if delay > 0 and fake._pause(delay):
                    return  # stop(): cut the stream short (no closing chunk)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client hung up mid-stream
            fake._note_hang_up()

    def _send(
        self,
        status: int,
        payload: bytes,
        content_type: str,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if extra is not _UNSIZED:  # HTTP/1.0: else the body ends with the connection
                self.send_header("Content-Length", str(len(payload)))
            for key, value in (extra or {}).items() if extra is not _UNSIZED else ():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the client hung up (e.g. after its own timeout)


_Answer = tuple[int, bytes, str, Mapping[str, str]]
#: An answer and the :class:`Trickle` that paces it.
_Paced = tuple[int, bytes, str, Mapping[str, str], Trickle]
#: Extra headers that mean "send no Content-Length" (never sent themselves).
_UNSIZED: Mapping[str, str] = {"x-fake-unsized": "1"}
_JSON = "application/json"
_SSE = "text/event-stream"
#: One write of a stream: seconds to wait first, then the bytes (one or more SSE events).
_Beat: TypeAlias = tuple[float, bytes]


@dataclass(frozen=True)
class _Stream:
    """A 200 ``text/event-stream`` answer, written beat by beat."""

    beats: tuple[_Beat, ...]

    def whole(self) -> _Answer:
        """The same events as one sized body (for a :class:`Trickle`)."""
        return 200, b"".join(data for _, data in self.beats), _SSE, {}


class FakeLLM:
    """A scripted LLM server on ``127.0.0.1`` speaking the openai or anthropic wire.

    Usage::

        with FakeLLM(style="anthropic") as fake:
            fake.push(ToolCall("lookup", {"q": "x"}), Text("done"))
            client = toolnexus.create_client(base_url=fake.url, style="anthropic", ...)

    ``start()``/``stop()`` may also be called directly; ``stop()`` is idempotent.
    ``stream_pace`` is the seconds each streamed piece waits when its reply sets no
    ``pace`` (``1/20``: a 20 tokens/s model); it may be changed at any time.
    """

    def __init__(
        self,
        style: Style = "openai",
        default: Reply | None = None,
        *,
        stream_pace: float = 0.0,
    ) -> None:
        if style not in ("openai", "anthropic"):
            raise ValueError(f"style must be 'openai' or 'anthropic', not {style!r}")
        _check_pace(stream_pace)
        self.style: Style = style
        #: Answer used when no script applies (and by a released :class:`Hang` without ``then``).
        self.default: Reply = default if default is not None else Text("done")
        #: Seconds before each streamed piece of a reply without its own ``pace``.
        self.stream_pace: float = stream_pace
        self._start_pace = stream_pace
        #: Optional ``fn(request_body) -> Reply | None``, consulted before the scripts.
        self.respond: Callable[[dict[str, Any]], Reply | None] | None = None
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque[Reply] = deque()
        self._keyed: dict[str, deque[Reply]] = {}
        self._requests: list[RecordedRequest] = []
        self._held = 0
        self._hung_up = 0
        self._release_gen = 0
        self._stopping = False
        self._ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------- #

    def start(self) -> FakeLLM:
        """Bind ``127.0.0.1:0`` and serve on a daemon thread. Returns ``self``."""
        with self._cond:
            if self._server is not None:
                raise RuntimeError("FakeLLM is already running")
            server = _Server((_HOST, 0), _Handler)
            server.fake = self
            self._stopping = False
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"fake-llm-{server.server_address[1]}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Release every held request, then shut down and close the socket. Idempotent."""
        with self._cond:
            server, thread = self._server, self._thread
            if server is None:
                return
            self._server = None
            self._thread = None
            self._stopping = True
            self._cond.notify_all()
            # Held handlers wake on _stopping; give them a moment to leave the hold.
            self._cond.wait_for(lambda: self._held == 0, timeout=5.0)
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5.0)

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (only while running)."""
        server = self._server
        if server is None:
            raise RuntimeError("FakeLLM is not running; call start() first")
        return int(server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` -- a ``base_url`` for either client style."""
        return f"http://{_HOST}:{self.port}/v1"

    # -- scripting ----------------------------------------------------------- #

    def push(self, *replies: Reply) -> None:
        """Append replies to the shared FIFO queue (one is consumed per LLM call)."""
        _check_replies(replies)
        with self._cond:
            self._queue.extend(replies)

    def on(self, marker: str, *replies: Reply) -> None:
        """Append replies to the keyed script for ``marker``.

        They answer (FIFO) requests whose first user message text contains ``marker``,
        ahead of the shared queue -- so concurrent runs can each have their own script.
        """
        if not marker:
            raise ValueError("marker must be a non-empty string")
        _check_replies(replies)
        with self._cond:
            self._keyed.setdefault(marker, deque()).extend(replies)

    @property
    def remaining(self) -> int:
        """How many scripted replies (shared queue + keyed scripts) are still unused."""
        with self._cond:
            return len(self._queue) + sum(len(q) for q in self._keyed.values())

    # -- inspection ---------------------------------------------------------- #

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every POST received so far, in arrival order."""
        with self._cond:
            return list(self._requests)

    def requests_for(self, marker: str) -> list[RecordedRequest]:
        """The recorded requests whose first user message text contains ``marker``."""
        return [r for r in self.requests if marker in r.first_user_text]

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until at least ``n`` requests arrived; return them. Raises TimeoutError."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._requests) >= n, timeout=timeout):
                got = [f"{r.method} {r.path}" for r in self._requests]
                raise TimeoutError(
                    f"fake-llm: waited {timeout}s for {n} request(s), got {len(got)}: {got}"
                )
            return list(self._requests)

    @property
    def held(self) -> int:
        """Number of requests currently held open by a :class:`Hang`."""
        with self._cond:
            return self._held

    def wait_held(self, n: int, timeout: float = 10.0) -> None:
        """Block until at least ``n`` requests are being held. Raises TimeoutError."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._held >= n, timeout=timeout):
                raise TimeoutError(
                    f"fake-llm: waited {timeout}s for {n} held request(s), {self._held} held"
                )

    @property
    def hung_up(self) -> int:
        """How many :class:`Trickle` or streamed answers ended because the client hung up."""
        with self._cond:
            return self._hung_up

    def wait_hung_up(self, n: int, timeout: float = 10.0) -> None:
        """Block until at least ``n`` answers ended with a hang-up. Raises TimeoutError."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._hung_up >= n, timeout=timeout):
                raise TimeoutError(
                    f"fake-llm: waited {timeout}s for {n} hang-up(s), saw {self._hung_up}"
                )

    def reset(self) -> None:
        """Forget every script and the default, put ``stream_pace`` back to the
        constructor's, and let held requests go: the fake as it started (its
        requests recorded so far stay). For a fake that several tests share."""
        with self._cond:
            self._queue.clear()
            self._keyed.clear()
            self.default = Text("done")
            self.respond = None
            self.stream_pace = self._start_pace
        self.release()

    def release(self) -> None:
        """Let every currently held request go (each answers its Hang's ``then`` or default).

        Requests that hit a :class:`Hang` after this call are held again.
        """
        with self._cond:
            self._release_gen += 1
            self._cond.notify_all()

    # -- request handling (server threads) ----------------------------------- #

    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> _Answer | _Paced | _Stream:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path_style = _style_for_path(path)
        request = RecordedRequest(
            method="POST",
            path=path,
            headers=headers,
            body=body,
            first_user_text=first_user_text(body, path_style or self.style),
        )
        with self._cond:
            self._requests.append(request)
            self._cond.notify_all()

        if path_style is None:
            return _plain(404, f"fake-llm: no endpoint at POST {path}")
        if path_style != self.style:
            right = "/v1/chat/completions" if self.style == "openai" else "/v1/messages"
            return _plain(
                404,
                f"fake-llm is {self.style}-style (POST {right}) but got a {path_style}-style "
                f"request at POST {path}: use a client with style={self.style!r} or "
                f"FakeLLM(style={path_style!r})",
            )
        if not isinstance(body, dict):
            return _plain(400, "fake-llm: request body is not a JSON object")

        reply = self._pick(body, request.first_user_text)
        while isinstance(reply, Hang):
            reply = self._hold(reply)
        if isinstance(reply, Trickle):
            then = reply.then if reply.then is not None else self.default
            answer = self._render(then, body)
            return (*(answer.whole() if isinstance(answer, _Stream) else answer), reply)
        return self._render(reply, body)

    def _pick(self, body: dict[str, Any], text: str) -> Reply:
        respond = self.respond
        if respond is not None:
            chosen = respond(body)
            if chosen is not None:
                return chosen
        with self._cond:
            for marker, script in self._keyed.items():
                if script and marker in text:
                    return script.popleft()
            if self._queue:
                return self._queue.popleft()
            return self.default

    def _hold(self, hang: Hang) -> Reply:
        with self._cond:
            generation = self._release_gen
            self._held += 1
            self._cond.notify_all()
            try:
                released = self._cond.wait_for(
                    lambda: self._release_gen != generation or self._stopping,
                    timeout=hang.max_seconds,
                )
            finally:
                self._held -= 1
                self._cond.notify_all()
        if not released:
            return Fail(
                500,
                f"fake-llm: Hang(max_seconds={hang.max_seconds}) expired without release()",
            )
        return hang.then if hang.then is not None else self.default

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds`` between streamed pieces (server thread); True if stop() came."""
        with self._cond:
            return self._cond.wait_for(lambda: self._stopping, timeout=seconds)

    def _note_hang_up(self) -> None:
        with self._cond:
            self._hung_up += 1
            self._cond.notify_all()

    def _trickle(
        self, write: Callable[[bytes], Any], head: bytes, body: bytes, pace: Trickle
    ) -> None:
        """Send ``head`` and ``body`` as ``pace`` says (server thread)."""
        end = time.monotonic() + pace.max_seconds
        wire = head + body if pace.headers else body
        try:
            if not pace.headers:
                write(head)
            for i in range(len(wire)):
                write(wire[i : i + 1])
                left = end - time.monotonic()
                with self._cond:
                    if left <= 0 or self._cond.wait_for(
                        lambda: self._stopping, timeout=min(pace.every, left)
                    ):
                        return
        except OSError:  # the client hung up (after its own deadline)
            self._note_hang_up()

    def _render(self, reply: Reply, body: dict[str, Any]) -> _Answer | _Stream:
        if isinstance(reply, Fail):
            if isinstance(reply.body, Mapping):
                payload, ctype = json.dumps(dict(reply.body)).encode(), _JSON
            else:
                payload, ctype = reply.body.encode(), "text/plain; charset=utf-8"
            return reply.status, payload, ctype, dict(reply.headers)
        if isinstance(reply, Raw):
            return reply.status, reply.body, reply.content_type, {} if reply.sized else _UNSIZED
        if not isinstance(reply, Text | ToolCall):
            return _plain(500, f"fake-llm: not a reply object: {reply!r}")
        with self._cond:
            seq = next(self._ids)
        model = str(body.get("model") or "fake-model")
        if body.get("stream") is True:
            pace = reply.pace if reply.pace is not None else self.stream_pace
            if self.style == "anthropic":
                return _Stream(tuple(_anthropic_stream(reply, model, seq, pace)))
            options = body.get("stream_options")
            usage = isinstance(options, Mapping) and options.get("include_usage") is True
            return _Stream(tuple(_openai_stream(reply, model, seq, pace, usage)))
        envelope = (
            _openai_envelope(reply, model, seq)
            if self.style == "openai"
            else _anthropic_envelope(reply, model, seq)
        )
        return 200, json.dumps(envelope).encode(), _JSON, {}


def _check_replies(replies: Iterable[Any]) -> None:
    for reply in replies:
        if not isinstance(reply, Text | ToolCall | Fail | Hang | Raw | Trickle):
            raise TypeError(f"not a reply (Text, ToolCall, Fail, Hang, Raw or Trickle): {reply!r}")


def _plain(status: int, message: str) -> _Answer:
    return status, message.encode(), "text/plain; charset=utf-8", {}


def _call_id(call: ToolCall, prefix: str, seq: int, index: int) -> str:
    return call.id if call.id is not None else f"{prefix}_{seq}_{index}"


def _openai_envelope(reply: Text | ToolCall, model: str, seq: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    if isinstance(reply, Text):
        message["content"] = reply.text
        finish = "stop"
    else:
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": _call_id(call, "call_fake", seq, i),
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(dict(call.args))},
            }
            for i, call in enumerate(reply.calls)
        ]
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-fake-{seq}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _openai_usage(reply.usage),
    }


def _openai_usage(usage: tuple[int, int]) -> dict[str, int]:
    prompt, completion = usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _anthropic_envelope(reply: Text | ToolCall, model: str, seq: int) -> dict[str, Any]:
    if isinstance(reply, Text):
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}]
        stop = "end_turn"
    else:
        content = [
            {
                "type": "tool_use",
                "id": _call_id(call, "toolu_fake", seq, i),
                "name": call.name,
                "input": dict(call.args),
            }
            for i, call in enumerate(reply.calls)
        ]
        stop = "tool_use"
    prompt, completion = reply.usage
    return {
        "id": f"msg_fake_{seq}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


# --------------------------------------------------------------------------- #
# Streamed answers (server-sent events)
# --------------------------------------------------------------------------- #


def _sse_data(payload: Mapping[str, Any]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def _sse_event(payload: Mapping[str, Any]) -> bytes:
    return f"event: {payload['type']}\n".encode() + _sse_data(payload)


def _openai_deltas(reply: Text | ToolCall, seq: int) -> list[dict[str, Any]]:
    """The ``delta`` of every paced chunk: one per text piece, or per call its opening
    (``id``, ``function.name``) and then one per piece of its JSON arguments."""
    if isinstance(reply, Text):
        return [{"content": piece} for piece in text_pieces(reply.text)]
    deltas: list[dict[str, Any]] = []
    for i, call in enumerate(reply.calls):
        function = {"name": call.name, "arguments": ""}
        opening = {"index": i, "id": _call_id(call, "call_fake", seq, i), "type": "function"}
        deltas.append({"tool_calls": [{**opening, "function": function}]})
        deltas += [
            {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}
            for piece in text_pieces(json.dumps(dict(call.args)))
        ]
    return deltas


def _openai_stream(
    reply: Text | ToolCall, model: str, seq: int, pace: float, include_usage: bool
) -> list[_Beat]:
    """``chat.completion.chunk`` events: role, paced deltas, finish, usage, ``[DONE]``."""
    base = {
        "id": f"chatcmpl-fake-{seq}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: Mapping[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse_data({**base, "choices": [choice]})

    text = isinstance(reply, Text)
    beats = [(0.0, chunk({"role": "assistant", "content": "" if text else None}))]
    beats += [(pace, chunk(delta)) for delta in _openai_deltas(reply, seq)]
    tail = chunk({}, "stop" if text else "tool_calls")
    if include_usage:
        tail += _sse_data({**base, "choices": [], "usage": _openai_usage(reply.usage)})
    beats.append((0.0, tail + b"data: [DONE]\n\n"))
    return beats


def _anthropic_blocks(
    reply: Text | ToolCall, seq: int
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each content block's ``content_block_start`` block and its deltas."""
    if isinstance(reply, Text):
        deltas = [{"type": "text_delta", "text": piece} for piece in text_pieces(reply.text)]
        return [({"type": "text", "text": ""}, deltas)]
    return [
        (
            {
                "type": "tool_use",
                "id": _call_id(call, "toolu_fake", seq, i),
                "name": call.name,
                "input": {},
            },
            [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in text_pieces(json.dumps(dict(call.args)))
            ],
        )
        for i, call in enumerate(reply.calls)
    ]


def _anthropic_stream(reply: Text | ToolCall, model: str, seq: int, pace: float) -> list[_Beat]:
    """Messages-API events: message_start, the blocks (deltas paced), message_delta/stop."""
    prompt, completion = reply.usage
    message = {
        "id": f"msg_fake_{seq}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        # Output tokens come once, in message_delta: toolnexus adds both events' usage.
        "usage": {"input_tokens": prompt, "output_tokens": 0},
    }
    beats = [(0.0, _sse_event({"type": "message_start", "message": message}))]
    for index, (block, deltas) in enumerate(_anthropic_blocks(reply, seq)):
        start = {"type": "content_block_start", "index": index, "content_block": block}
        beats.append((0.0, _sse_event(start)))
        beats += [
            (pace, _sse_event({"type": "content_block_delta", "index": index, "delta": delta}))
            for delta in deltas
        ]
        beats.append((0.0, _sse_event({"type": "content_block_stop", "index": index})))
    stop = "end_turn" if isinstance(reply, Text) else "tool_use"
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": completion},
    }
    beats.append((0.0, _sse_event(end) + _sse_event({"type": "message_stop"})))
    return beats


__all__ = [
    "DEFAULT_USAGE",
    "Fail",
    "FakeLLM",
    "Hang",
    "Raw",
    "RecordedRequest",
    "Reply",
    "Style",
    "Text",
    "ToolCall",
    "Trickle",
    "first_user_text",
    "text_pieces",
]
