"""One webhook call: POST to a checked address, no redirects, bounded reads.

It connects to the address :func:`.ssrf.check_url` checked (the ``Host``
header and, for https, SNI and the certificate name are the URL's host), so
a name cannot resolve to one address for the check and another for the call.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from ..a2a.pushconfig import HEADER_RULE, header_safe
from .ssrf import Target

#: Bytes of a response read (enough for an error message, no more).
MAX_RESPONSE_BYTES = 4096


@dataclass(frozen=True)
class Reply:
    """What a call came to: an HTTP status, or the error that prevented one.
    ``unsendable``: the request cannot be made as configured, whenever it is
    tried (a header value that is not header-safe)."""

    status: int | None
    error: str = ""
    retry_after: float | None = None
    body: bytes = b""
    unsendable: bool = False

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def retryable(self) -> bool:
        """Worth another try: no answer, a timeout, a 5xx or a 429."""
        if self.unsendable:
            return False
        return self.status is None or self.status >= 500 or self.status in (408, 429)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(
            target.host, target.port, timeout=timeout, context=ssl.create_default_context()
        )
        self.target = target

    def connect(self) -> None:
        sock = socket.create_connection((self.target.address, self.target.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.target.host)  # type: ignore[attr-defined]


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.target = target

    def connect(self) -> None:
        self.sock = socket.create_connection((self.target.address, self.target.port), self.timeout)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def post(target: Target, body: bytes, headers: dict[str, str], timeout: float) -> Reply:
    """POST ``body`` to ``target``; never raises: whatever prevents an answer
    — the network, or building the request — is the Reply's error."""
    for name, value in headers.items():
        if not header_safe(value):
            # Never sent, nor quoted (it may be a secret): a config stored
            # before credentials were checked at creation.
            return Reply(
                None,
                error=f"the {name} header cannot be sent: it is not {HEADER_RULE}",
                unsendable=True,
            )
    cls = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    connection = cls(target, timeout)
    try:
        host = target.host if ":" not in target.host else f"[{target.host}]"
        default = 443 if target.scheme == "https" else 80
        connection.putrequest("POST", target.path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host if target.port == default else f"{host}:{target.port}")
        for name, value in {
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
            "User-Agent": "toolnexus-django push",
            **headers,
        }.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        data = response.read(MAX_RESPONSE_BYTES)
        return Reply(
            response.status, body=data, retry_after=_retry_after(response.getheader("Retry-After"))
        )
    except (OSError, http.client.HTTPException) as exc:
        return Reply(None, error=f"{type(exc).__name__}: {exc}"[:500])
    except Exception as exc:  # building the request failed: a failure of this config
        return Reply(
            None, error=f"the request could not be made: {type(exc).__name__}: {exc}"[:500]
        )
    finally:
        connection.close()


__all__ = ["Reply", "post"]
