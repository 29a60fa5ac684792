"""The HTTP transport toolnexus's client makes its model calls through, as
this app wraps it (``http_transport``, toolnexus's public hook):

- :class:`BudgetedTransport` cuts each call's timeout to what is left of
  the run (``RUN_TIMEOUT``), around whichever transport is configured;
- :class:`BoundedTransport` is the default transport: it reads at most
  ``MAX_MODEL_RESPONSE_BYTES`` of an answer (and of an HTTP error's body)
  and hands toolnexus only an answer of the shape it reads, over kept-open
  connections (:class:`KeptConnections`); each call, start to end, within
  its timeout (a :class:`~.deadline.CallDeadline`), however the bytes arrive;
  a streaming call answered with one JSON body is handed over as its stream
  (:mod:`.sseanswer`);
- a model's answer it refuses raises a :class:`~.modelanswer.ModelAnswerError`, whose
  message says what is wrong in words (it becomes the failed Task's status
  message; the bytes that were wrong go to the log only).
"""

from __future__ import annotations

import functools
import json
import select
import socket
import threading
import urllib.error
import urllib.request
from http.client import BadStatusLine, HTTPConnection, HTTPResponse
from typing import Any
from urllib.parse import urlsplit

import toolnexus
from toolnexus.client import ProviderError

from ..conf import toolnexus_settings
from ..runtime.threads import current_budget
from .deadline import (
    RUN_OVER,
    AbandonedCall,
    CallDeadline,
    WatchedHTTPConnection,
    WatchedHTTPSConnection,
    watched_opener,
)
from .modelanswer import ModelAnswerTooLarge, parse_answer
from .sseanswer import SSEResponse, sse_of
from .ssemerge import MergedEvents

#: How much of a body is read per call (the bound is checked after each).
CHUNK = 64 * 1024


class BudgetedTransport:
    """toolnexus's HTTP transport (or the one configured), with each model
    call's timeout clamped to what is left of the run's budget. Works around
    toolnexus: its per-request timeout knows nothing of RUN_TIMEOUT (a silent
    model would hold an IO thread long after the run gave up); this only
    delegates, with a shorter timeout, which :class:`BoundedTransport` holds
    the whole call to.
    """

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner if inner is not None else toolnexus.UrllibTransport()

    def _clamp(self, timeout: float) -> float:
        budget = current_budget()
        if budget is None:
            return timeout
        left = budget.remaining()
        if budget.abandoned or (left is not None and left <= 0):
            raise AbandonedCall(RUN_OVER)
        return timeout if left is None else min(timeout, left)

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> Any:
        return self.inner.post(url, headers, payload, self._clamp(timeout))

    def open(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> Any:
        return self.inner.open(url, headers, payload, self._clamp(timeout))


class BoundedTransport:
    """toolnexus's default transport (a blocking POST, over a kept-open
    connection), reading at most ``max_bytes`` of any body. Works around
    toolnexus: its ``UrllibTransport`` reads a whole answer and a whole HTTP
    error body, however large (a 50 MB answer of short strings took a worker
    past 700 MB), and its ``timeout`` bounds each socket read, not the call
    (a model sending a byte every 0.5 s kept a run 244 s past a 120 s
    ``timeout_ms``): here the call ends at its ``timeout`` (connect, headers,
    body, a stream), its connection cut and not kept, with a ``TimeoutError``
    that toolnexus handles as its own. An HTTP error is raised as toolnexus's
    own ``ProviderError``, so its retries and ``Retry-After`` handling are
    unchanged. The answer is checked for the fields toolnexus reads without
    checking (a ``{"choices": "x"}`` made it raise ``TypeError: string
    indices must be integers``).
    """

    def __init__(self, max_bytes: int, style: str = "openai") -> None:
        self.max_bytes = max_bytes
        self.style = style
        self._kept = KeptConnections()

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        with self._deadline(timeout).running() as deadline:
            body = self._post_kept(url, headers, payload, deadline)
            if body is None:  # not straight to its host, or redirected: urllib
                with self._open(url, headers, payload, deadline) as response:
                    body = read_bounded(response, self.max_bytes)
        return parse_answer(body, self.style)

    def _post_kept(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], deadline: CallDeadline
    ) -> bytes | None:
        """The answer's body, over a kept-open connection (None: not for one)."""
        if not KeptConnections.direct(url):
            return None
        data = json.dumps(payload).encode("utf-8")
        response = self._kept.post(url, headers, data, deadline)
        if response is None:
            return None
        whole = False
        try:
            if response.status >= 400:
                text = read_bounded(response, self.max_bytes, cut=True).decode("utf-8", "replace")
                raise ProviderError(response.status, text, response.headers.get("Retry-After"))
            body = read_bounded(response, self.max_bytes)
            whole = deadline.finish()  # a connection the deadline cut is not kept
            return body
        finally:
            self._kept.done(response, whole=whole)

    def open(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> Any:
        """A streaming answer, refused once it has sent more than ``max_bytes``
        and cut when ``timeout`` has passed since the call began. An answer
        that is not a stream (a server that ignores ``"stream": true`` sends
        one JSON body, from which toolnexus would read no event and end the
        run with an empty answer) is read and checked as :meth:`post` reads
        one, and handed over as the events of its stream."""
        deadline = self._deadline(timeout)
        with deadline.running(to_the_end=False):
            response = self._open(url, headers, payload, deadline)
        if is_event_stream(response):
            window = float(toolnexus_settings.STREAM_CHUNK_SECONDS)
            return MergedEvents(
                BoundedResponse(response, self.max_bytes, deadline), self.style, window
            )
        with deadline.running(), response:
            body = read_bounded(response, self.max_bytes)
        return SSEResponse(sse_of(parse_answer(body, self.style), self.style))

    @staticmethod
    def _deadline(timeout: float) -> CallDeadline:
        """The call's deadline; the run's being over (canceled) ends it too."""
        deadline = CallDeadline(timeout)
        budget = current_budget()
        if budget is not None:
            budget.on_abandon(functools.partial(deadline.expire, abandoned=True))
        return deadline

    def _open(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], deadline: CallDeadline
    ) -> Any:
        """urllib's response (its default handlers: proxies, redirects), within ``deadline``."""
        data = json.dumps(payload).encode("utf-8")
        request = urllib.request.Request(url, data=data, method="POST", headers=headers)
        try:
            with deadline.guarding():
                return watched_opener().open(request, timeout=deadline.left())
        except urllib.error.HTTPError as error:
            with error:
                text = read_bounded(error, self.max_bytes, cut=True).decode("utf-8", "replace")
            retry_after = error.headers.get("Retry-After") if error.headers else None
            raise ProviderError(error.code, text, retry_after) from None


def is_event_stream(response: Any) -> bool:
    """Whether ``response`` says it is a stream of server-sent events (its
    Content-Type); one that does not say so is read as a whole answer."""
    headers = getattr(response, "headers", None)
    declared = headers.get("Content-Type") if headers is not None else None
    return (declared or "").split(";")[0].strip().lower() == "text/event-stream"


def read_bounded(response: Any, limit: int, *, cut: bool = False) -> bytes:
    """At most ``limit`` bytes of ``response``'s body: past it, raise
    :class:`ModelAnswerTooLarge` (or, with ``cut``, return the first
    ``limit`` bytes) without reading the rest."""
    headers = getattr(response, "headers", None)
    length = headers.get("Content-Length") if headers is not None else None
    if not cut and length and length.strip().isdigit() and int(length) > limit:
        raise ModelAnswerTooLarge(limit)
    body = bytearray()
    while len(body) <= limit:
        chunk = response.read(min(CHUNK, limit + 1 - len(body)))
        if not chunk:
            return bytes(body)
        body += chunk
    if cut:
        return bytes(body[:limit])
    raise ModelAnswerTooLarge(limit)


#: What urllib's opener sends as User-Agent (``Python-urllib/3.x``).
USER_AGENT = urllib.request.OpenerDirector().addheaders[0][1]

Origin = tuple[str, str, int | None]

MAX_IDLE = 16  # idle connections kept per origin (more are closed after their call)


class KeptConnections:
    """Model calls over kept-open HTTP/1.1 connections, not urllib's one per call,
    sent and failing as urllib's (its headers, a failed send as ``URLError``). Idle
    ones are shared per origin (the last put back first, at most ``max_idle``); a proxy
    from the environment or a redirect is left to urllib (:meth:`direct`; None)."""

    def __init__(self, max_idle: int = MAX_IDLE) -> None:
        self.max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: dict[Origin, list[HTTPConnection]] = {}

    @staticmethod
    def direct(url: str) -> bool:
        """Whether ``url`` goes straight to its host (http(s), no proxy for it)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        return parts.scheme not in _proxies() or bool(urllib.request.proxy_bypass(parts.hostname))

    def post(
        self, url: str, headers: dict[str, str], data: bytes, deadline: CallDeadline
    ) -> HTTPResponse | None:
        """The response to POSTing ``data``, for the caller to read, then
        :meth:`done`; None for a redirect. A kept connection the server closed
        meanwhile is replaced once, before anything was answered on it. Every
        connection it uses, ``deadline`` guards (the caller runs it)."""
        parts = urlsplit(url)
        origin: Origin = (parts.scheme, parts.hostname or "", parts.port)
        fields = {"User-Agent": USER_AGENT, "Content-Type": "application/x-www-form-urlencoded"}
        fields.update((k.title(), v) for k, v in headers.items())
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        while True:
            timeout = deadline.left()  # past it: the timeout, not one more connection
            with self._lock:
                idle = self._idle.get(origin)
                conn = idle.pop() if idle else None
            if conn is not None and (conn.sock is None or readable_now(conn.sock)):
                conn.close()  # readable while idle: the server closed it (or sent junk)
                continue
            reused = conn is not None
            if conn is None:
                https = parts.scheme == "https"
                kind = WatchedHTTPSConnection if https else WatchedHTTPConnection
                conn = kind(parts.hostname or "", parts.port, timeout=timeout)
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
                deadline.guard(conn.sock)
            try:
                response = _send(conn, path, fields, data)
            except _Stale:
                if reused:
                    continue  # the server closed it while it was kept: once more, anew
                raise
            if 300 <= response.status < 400:
                conn.close()
                return None
            response.kept = (origin, conn)  # type: ignore[attr-defined]
            return response

    def done(self, response: Any, *, whole: bool) -> None:
        """``response`` was read (``whole``: to its end): keep its connection, else close it."""
        kept: tuple[Origin, HTTPConnection] | None = getattr(response, "kept", None)
        if kept is None:
            return
        origin, conn = kept
        if whole and not response.will_close and response.isclosed():
            with self._lock:
                idle = self._idle.setdefault(origin, [])
                if len(idle) < self.max_idle:
                    idle.append(conn)
                    return
        conn.close()


@functools.cache
def _proxies() -> dict[str, str]:
    """The environment's proxies, read once, as ``urlopen`` does (its opener is built once)."""
    return urllib.request.getproxies()


class _Stale(Exception):
    """A kept connection failed before anything was answered on it."""


def _send(conn: HTTPConnection, path: str, fields: dict[str, str], data: bytes) -> HTTPResponse:
    """POST over ``conn``, failing as urllib does (a failed send as ``URLError``);
    on a connection used before, signs the server closed it are :class:`_Stale`."""
    reused = conn.sock is not None
    try:
        try:
            conn.request("POST", path, body=data, headers=fields)
        except OSError as err:
            if reused:
                raise _Stale from err
            raise urllib.error.URLError(err)  # noqa: B904 (urllib's own words)
        try:
            return conn.getresponse()
        except (ConnectionError, BadStatusLine) as err:
            if reused:
                raise _Stale from err
            raise
    except BaseException:
        conn.close()
        raise


class BoundedResponse:
    """A live streaming response that raises :class:`ModelAnswerTooLarge`
    once more than ``limit`` bytes have been read from it, and the
    ``deadline``'s timeout once that passed (the end it then reads is not the
    stream's: the deadline shut its socket)."""

    def __init__(self, response: Any, limit: int, deadline: CallDeadline | None = None) -> None:
        self._response = response
        self._limit = limit
        self._read = 0
        self._deadline = deadline

    def _count(self, read: Any, amount: int) -> bytes:
        try:
            data = read(amount)
        except Exception as exc:
            if self._deadline is not None and self._deadline.expired:
                raise self._deadline.error() from exc
            raise
        if self._deadline is not None:
            self._deadline.check()
        self._read += len(data)
        if self._read > self._limit:
            raise ModelAnswerTooLarge(self._limit)
        return data

    def read(self, amount: int = -1) -> bytes:
        if amount is None or amount < 0:
            amount = self._limit + 1 - self._read  # never the whole of an endless body
        return self._count(self._response.read, amount)

    def read1(self, amount: int = -1) -> bytes:
        return self._count(self._response.read1, amount)

    def readline(self, limit: int = -1) -> bytes:
        return self._count(self._response.readline, limit)

    def close(self) -> None:
        if self._deadline is not None:
            self._deadline.finish()
        self._response.close()

    def __enter__(self) -> BoundedResponse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._response, name)


def readable_now(sock: socket.socket) -> bool:
    """Whether ``sock`` has something to read (or its peer closed it) at once.
    poll(), not select(): select() refuses a descriptor past FD_SETSIZE
    (1,024), which a busy worker's kept model connection reaches (the Task
    then failed with "filedescriptor out of range in select()")."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])  # Windows: no poll(), no such bound
