"""A model call's deadline, for the whole call: connect, TLS handshake,
headers and body (or a stream), however the bytes arrive.

A socket timeout bounds one read, not a call: a model that answered 200,
then one byte every half second, kept a Task ``working`` 244 s past a 120 s
``timeout_ms`` (``http.client`` reads headers line by line and a body to its
length, each read well within the timeout). So each call of the default
transport runs under a :class:`CallDeadline`: one daemon thread per process
(:class:`Watchdog`) shuts the call's sockets down when it passes, which ends
the blocked read at once, and the call raises :class:`ModelCallTimeout`, a
``TimeoutError`` (toolnexus's client reads one past its ``timeout_ms`` as its
own ``RunTimeout``, not retried). A connection cut so is never kept.

Measured (2-core box, 20,000 calls): arming and finishing a deadline costs
2.5 µs; a ``threading.Timer`` per call 324 µs. Per-read timeouts with small
reads cannot bound headers (``http.client`` reads those), and read a 4 MiB
body in 2.9 ms instead of 1.1.
"""

from __future__ import annotations

import contextvars
import functools
import heapq
import itertools
import os
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.client import HTTPConnection, HTTPSConnection
from typing import Any

#: What a call for a run that is over says (:class:`AbandonedCall`).
RUN_OVER = "the run is over (RUN_TIMEOUT passed, or it was canceled)"


class ModelCallTimeout(TimeoutError):
    """A model call outlived its deadline (the run's time left)."""


class AbandonedCall(TimeoutError):
    """A model call belongs to a run that is already over (a TimeoutError,
    so toolnexus handles it like a network timeout)."""


_current: contextvars.ContextVar[CallDeadline | None] = contextvars.ContextVar(
    "toolnexus_model_call_deadline", default=None
)


class CallDeadline:
    """The deadline of one model call, ``timeout`` seconds from now, watched
    from its creation; the sockets it :meth:`guard`\\ s are shut down when it
    passes (or when :meth:`expire` is called first: the run is over)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.at = time.monotonic() + timeout
        self.expired = False  #: it passed (or was expired) before the call finished
        self.finished = False
        self._abandoned = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        WATCHDOG.watch(self)

    def guard(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the deadline passes (at once if it has)."""
        with self._lock:
            if self.expired:
                _shut(sock)
            elif not self.finished:
                self._sockets.append(sock)

    def expire(self, *, abandoned: bool = False) -> None:
        """End the call now (``abandoned``: its run is over), unless it finished."""
        with self._lock:
            if self.finished or self.expired:
                return
            self.expired, self._abandoned = True, abandoned
            # Under the lock: the caller closes its sockets only after
            # finish(), so none of these is a descriptor reused meanwhile.
            for sock in self._sockets:
                _shut(sock)
            self._sockets = []

    def finish(self) -> bool:
        """The call is over: stop watching it. Whether it ended in time (a
        call that ends past the deadline did not, even before the watchdog woke)."""
        with self._lock:
            first = not self.finished
            if first:
                self.finished = True
                self._sockets = []
                self.expired = self.expired or time.monotonic() >= self.at
            in_time = not self.expired
        if first and in_time:
            WATCHDOG.forget()
        return in_time

    def left(self) -> float:
        """Seconds left (a socket operation's own timeout); none: the timeout."""
        left = self.at - time.monotonic()
        if left <= 0:
            self.expire()
            raise self.error()
        self.check()
        return left

    def check(self) -> None:
        """Raise the call's timeout if the deadline passed."""
        if self.expired:
            raise self.error()

    def error(self) -> TimeoutError:
        """What the call raises once expired."""
        if self._abandoned:
            return AbandonedCall(RUN_OVER)
        return ModelCallTimeout(f"the model did not answer within {self.timeout:.3g}s")

    @contextmanager
    def guarding(self) -> Iterator[CallDeadline]:
        """Connections opened in this block are guarded (:class:`WatchedHTTPConnection`)."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    @contextmanager
    def running(self, *, to_the_end: bool = True) -> Iterator[CallDeadline]:
        """The call runs in this block, :meth:`guarding` it. At the block's
        end — with ``to_the_end=False`` only if it raises — the call is over;
        past the deadline, whatever happened is the timeout."""
        with self.guarding():
            try:
                yield self
            except BaseException as exc:
                if not self.finish():
                    raise self.error() from exc
                raise
            if to_the_end and not self.finish():
                raise self.error()


def _shut(sock: socket.socket) -> None:
    try:
        # socket.socket's own: under TLS, SSLSocket.shutdown would also drop
        # its SSL state under the thread still reading it.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # closed already, or not connected yet


class Watchdog:
    """The one thread of a process that expires deadlines as they pass.

    Deadlines wait in a heap; one finished in time stays there until it
    reaches the top or the heap is rebuilt without the finished ones (when
    they are most of it)."""

    #: Finished deadlines tolerated in the heap before a rebuild is considered.
    STALE = 64

    def __init__(self) -> None:
        self._seq = itertools.count()
        self._reset()
        # A forked child has no watchdog thread, and the lock may be held.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, CallDeadline]] = []
        self._stale = 0
        self._thread: threading.Thread | None = None

    def watch(self, deadline: CallDeadline) -> None:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="toolnexus-deadlines", daemon=True
                )
                self._thread.start()
            heapq.heappush(self._heap, (deadline.at, next(self._seq), deadline))
            if self._heap[0][2] is deadline:
                self._cond.notify()

    def forget(self) -> None:
        """A deadline finished in time: rebuild the heap once most of it is such."""
        with self._cond:
            self._stale += 1
            if self._stale > self.STALE and 2 * self._stale > len(self._heap):
                self._heap = [item for item in self._heap if not item[2].finished]
                heapq.heapify(self._heap)
                self._stale = 0

    def _run(self) -> None:
        cond = self._cond  # this process's (a fork's child starts its own)
        while True:
            with cond:
                due = self._next_due(cond)
            due.expire()

    def _next_due(self, cond: threading.Condition) -> CallDeadline:
        while True:
            heap = self._heap
            while heap and heap[0][2].finished:
                heapq.heappop(heap)
                self._stale = max(0, self._stale - 1)
            wait = heap[0][0] - time.monotonic() if heap else None
            if wait is not None and wait <= 0:
                return heapq.heappop(heap)[2]
            cond.wait(None if wait is None else min(wait, threading.TIMEOUT_MAX))

    def __len__(self) -> int:
        """Deadlines in the heap (finished ones included)."""
        with self._cond:
            return len(self._heap)


WATCHDOG = Watchdog()


def _connect(
    address: tuple[str, int], timeout: Any = None, source_address: Any = None
) -> socket.socket:
    """``socket.create_connection`` whose socket the running call's deadline
    guards; each address tried within what is left of it."""
    deadline = _current.get()
    if deadline is None:
        return socket.create_connection(address, timeout, source_address)
    host, port = address
    error: OSError | None = None
    for family, kind, proto, _, where in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
        left = deadline.left()  # none: the timeout, not one more address
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(left)
            if source_address:
                sock.bind(source_address)
            sock.connect(where)
        except OSError as exc:
            sock.close()
            error = error or exc
            continue
        deadline.guard(sock)
        return sock
    raise error or OSError(f"getaddrinfo returned nothing for {host!r}")


class WatchedHTTPConnection(HTTPConnection):
    """An ``HTTPConnection`` whose sockets the running call's deadline guards
    (a proxy's tunnel included)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _connect


class WatchedHTTPSConnection(HTTPSConnection):
    """:class:`WatchedHTTPConnection` over TLS."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _connect

    def connect(self) -> None:
        # The handshake is bounded by the socket's timeout (what was left), as
        # a whole: CPython's ssl gives it one deadline. The TLS socket it ends
        # with is guarded anew (wrapping detached the plain one the deadline holds).
        super().connect()
        deadline = _current.get()
        if deadline is not None:
            deadline.guard(self.sock)


class _Watched:
    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        tls = issubclass(http_class, HTTPSConnection)
        watched = WatchedHTTPSConnection if tls else WatchedHTTPConnection
        return super().do_open(watched, req, **kwargs)  # type: ignore[misc]


class _WatchedHTTPHandler(_Watched, urllib.request.HTTPHandler):
    pass


class _WatchedHTTPSHandler(_Watched, urllib.request.HTTPSHandler):
    pass


@functools.cache
def watched_opener() -> urllib.request.OpenerDirector:
    """urllib's default opener (proxies from the environment, redirects),
    built once as ``urlopen``'s is, over :class:`WatchedHTTPConnection`\\ s."""
    return urllib.request.build_opener(_WatchedHTTPHandler, _WatchedHTTPSHandler)
