"""Model calls over kept-open HTTP/1.1 connections.

urllib opens a connection for every request and closes it after (``Connection:
close``): a model call paid a TCP connect, urllib's handler chain and the
teardown, on the model's side too. :class:`KeptConnections` keeps the
connections open between calls and sends the POSTs over them, the way
urllib would send them (its headers, its ``User-Agent``, its wrapping of a
failed send in ``URLError``), so toolnexus's retries and this app's failure
words see the same errors. What urllib does that this does not — a proxy
from the environment, a redirect — is left to urllib: :meth:`direct` says
no, or :meth:`post` returns None, and the caller sends it through urllib.
"""

from __future__ import annotations

import functools
import http.client
import threading
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import SplitResult, urlsplit

#: What urllib's opener sends as User-Agent (``Python-urllib/3.x``).
USER_AGENT = urllib.request.OpenerDirector().addheaders[0][1]

Origin = tuple[str, str, int | None]

#: The most idle connections kept per origin (more are closed after their call).
MAX_IDLE = 16


class KeptConnections:
    """Idle connections per origin, shared by the IO threads: a call takes
    one (the last put back) or opens one, and puts it back when its answer
    was read to the end — at most ``max_idle`` wait per origin, the rest
    are closed. A connection carries one request at a time."""

    def __init__(self, max_idle: int = MAX_IDLE) -> None:
        self.max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: dict[Origin, list[http.client.HTTPConnection]] = {}

    @staticmethod
    def direct(url: str) -> bool:
        """Whether ``url`` goes straight to its host (http or https, and no
        proxy configured for it): else urllib sends it."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        return parts.scheme not in _proxies() or bool(urllib.request.proxy_bypass(parts.hostname))

    def post(
        self, url: str, headers: dict[str, str], data: bytes, timeout: float
    ) -> http.client.HTTPResponse | None:
        """The response to POSTing ``data`` (its status not yet judged: the
        caller reads it, then calls :meth:`done`); None for a redirect, which
        the caller sends through urllib. A kept connection the server closed
        meanwhile is replaced once, before anything was answered on it."""
        parts = urlsplit(url)
        origin: Origin = (parts.scheme, parts.hostname or "", parts.port)
        fields = {"User-Agent": USER_AGENT, "Content-Type": "application/x-www-form-urlencoded"}
        fields.update((k.title(), v) for k, v in headers.items())
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        while True:
            conn = self._take(origin)
            reused = conn is not None
            if conn is None:
                conn = _connect(parts, timeout)
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
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

    def _take(self, origin: Origin) -> http.client.HTTPConnection | None:
        with self._lock:
            idle = self._idle.get(origin)
            return idle.pop() if idle else None

    def done(self, response: Any, *, whole: bool) -> None:
        """``response`` was read (``whole``: to its end): keep its connection
        for the next call, else close it."""
        kept: tuple[Origin, http.client.HTTPConnection] | None = getattr(response, "kept", None)
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
    """The proxies the environment names, read once per process, as urllib's
    ``urlopen`` does (its opener is built at the first call)."""
    return urllib.request.getproxies()


class _Stale(Exception):
    """A kept connection failed before anything was answered on it."""


def _send(
    conn: http.client.HTTPConnection, path: str, fields: dict[str, str], data: bytes
) -> http.client.HTTPResponse:
    """POST over ``conn``: errors as urllib raises them (a failed send wrapped
    in ``URLError``, one while reading the answer as is); on a connection
    used before, the signs of its having been closed by the server are
    :class:`_Stale`."""
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
        except (ConnectionError, http.client.BadStatusLine) as err:
            if reused:
                raise _Stale from err
            raise
    except BaseException:
        conn.close()
        raise


def _connect(parts: SplitResult, timeout: float) -> http.client.HTTPConnection:
    if parts.scheme == "https":
        return http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout)
    return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
