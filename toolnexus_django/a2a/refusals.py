"""Refusals: the endpoint's DRF authentication, permission and throttle
classes turned the caller away (HTTP 401, 403, 429, ...), said in the words
of the binding that was called, as its every other error is.

A2A v1.0 names the categories but no JSON-RPC code for them (§3.3.2:
"HTTP ``401 Unauthorized``, gRPC ``UNAUTHENTICATED``, JSON-RPC custom
error"); its own codes, -32001 to -32099, are the errors of §5.4. The
official Go SDK (a2a-go) answers -31401 for a caller who must authenticate
and -31403 for one who may not, outside JSON-RPC's reserved range (-32768 to
-32000), and its clients map both back. Here a refusal's code is -31000 less
its HTTP status, so those two agree with a2a-go and a throttle is -31429.

Every binding keeps the HTTP status and the headers DRF gave the refusal
(the 401's ``WWW-Authenticate`` challenge, the 429's ``Retry-After``):

- JSON-RPC: that status, with a JSON-RPC error object (the request's id
  where its body has one; v1.0 callers get ``data`` as ``[ErrorInfo]``);
- HTTP+JSON: that status, with a ``google.rpc.Status`` (AIP-193) whose
  ``ErrorInfo`` reason is a2a-go's: ``UNAUTHENTICATED``, ``UNAUTHORIZED``;
- gRPC: its own statuses (``serving/grpccall.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from .jsonrpc import RequestId, RpcError

#: A refusal's JSON-RPC code is this less its HTTP status (a2a-go's -31401, -31403).
REFUSAL_BASE = -31000
#: HTTP status -> (google.rpc status, ``ErrorInfo`` reason).
WORDS: dict[int, tuple[str, str]] = {
    401: ("UNAUTHENTICATED", "UNAUTHENTICATED"),
    403: ("PERMISSION_DENIED", "UNAUTHORIZED"),
    429: ("RESOURCE_EXHAUSTED", "RATE_LIMIT_EXCEEDED"),
    # A permission class may answer "not found" rather than say what exists.
    404: ("NOT_FOUND", "NOT_FOUND"),
    400: ("INVALID_ARGUMENT", "REFUSED"),
}


def words(status: int) -> tuple[str, str]:
    """(google.rpc status, ``ErrorInfo`` reason) of a refusal with HTTP ``status``."""
    if status in WORDS:
        return WORDS[status]
    return ("UNAVAILABLE" if status >= 500 else "FAILED_PRECONDITION"), "REFUSED"


class Refused(RpcError):
    """A refusal by the endpoint's DRF classes: its HTTP ``status``, DRF's
    detail as the message, and the ``headers`` DRF gave it, as (name, value)."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: Iterable[tuple[str, str]] = (),
        *,
        id: RequestId = None,
        details: bool = False,
    ) -> None:
        super().__init__(REFUSAL_BASE - status, message, id=id, details=details)
        self.status = status
        self.grpc_status, self.reason = words(status)
        self.headers: tuple[tuple[str, str], ...] = tuple(headers)

    def __repr__(self) -> str:
        return f"Refused({self.status}, {self.message!r})"


def message_of(status: int, data: Any) -> str:
    """The words of a DRF refusal's response ``data`` (``{"detail": ...}``, or
    whatever a project's exception handler answers); its status's phrase where
    they say nothing."""
    detail = data.get("detail") if isinstance(data, dict) else data
    if detail not in (None, "", [], {}):
        return str(detail)  # a list or an object of words too (a ValidationError's)
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Refused"


__all__ = ["REFUSAL_BASE", "Refused", "message_of", "words"]
