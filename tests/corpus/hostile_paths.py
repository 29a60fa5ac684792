"""Paths under the endpoint's mount that are no HTTP+JSON route, or name one
badly: each is answered as the binding answers (a ``google.rpc.Status`` JSON
body with the binding's HTTP status), never Django's HTML 404.

Each case: (HTTP method, the path after the mount as sent on the wire
(percent-encoded), the HTTP status, the google.rpc status)."""

from __future__ import annotations

NOT_FOUND = (404, "NOT_FOUND")
NOT_ALLOWED = (405, "UNIMPLEMENTED")
INVALID = (400, "INVALID_ARGUMENT")

CASES: list[tuple[str, str, tuple[int, str]]] = [
    # A verb missing, unknown, or spelled badly.
    ("POST", "message:", NOT_FOUND),
    ("GET", "message:", NOT_FOUND),
    ("POST", "message", NOT_FOUND),
    ("POST", "message:frobnicate", NOT_FOUND),
    ("POST", "message:send:", NOT_FOUND),
    ("POST", "message:send%00", NOT_FOUND),
    ("POST", "tasks/t-1:frobnicate", NOT_ALLOWED),  # the Task "t-1:frobnicate", read by GET
    ("GET", "tasks/t-1:frobnicate", NOT_FOUND),
    # Ids with CR/LF (a header injection attempt), NUL, over-long.
    ("GET", "tasks/a%0d%0ab", NOT_FOUND),
    ("POST", "tasks/a%0d%0ab:cancel", NOT_FOUND),
    ("GET", "tasks/x%0d%0aSet-Cookie:%20injected=1", NOT_FOUND),
    ("GET", "tasks/x%0aLocation:%20http://evil.example/", NOT_FOUND),
    ("GET", "tasks/a%00b", INVALID),
    ("GET", "tasks/" + "x" * 10_000, INVALID),
    ("GET", "message:" + "x" * 10_000, NOT_FOUND),
    ("GET", "x" * 10_000, NOT_FOUND),
    # Empty segments, trailing and doubled slashes, percent-encoded slashes.
    ("GET", "/", NOT_FOUND),
    ("GET", "/tasks", NOT_FOUND),
    ("POST", "/message:send", NOT_FOUND),
    ("GET", "tasks/", NOT_FOUND),
    ("GET", "tasks//x", NOT_FOUND),
    ("GET", "tasks/a%2Fb", NOT_FOUND),
    ("GET", "tasks/a%2Fb/pushNotificationConfigs", NOT_FOUND),
    ("GET", "tasks/t-1/pushNotificationConfigs/", NOT_FOUND),
    ("GET", "tasks/t-1/somethingElse", NOT_FOUND),
    ("GET", "extendedAgentCard/x", NOT_FOUND),
    # Nothing the binding has.
    ("GET", "foo", NOT_FOUND),
    ("POST", "foo/bar", NOT_FOUND),
    ("GET", "%00", NOT_FOUND),
    ("GET", "%ff%fe", NOT_FOUND),
    ("GET", "..%2f..%2fetc%2fpasswd", NOT_FOUND),
    ("GET", ".well-known/other.json", NOT_FOUND),
    ("GET", "admin/", NOT_FOUND),
    # Known routes asked with a method they do not take (HTTP's and others).
    ("PUT", "tasks", NOT_ALLOWED),
    ("DELETE", "message:send", NOT_ALLOWED),
    ("OPTIONS", "tasks", NOT_ALLOWED),
    ("PATCH", "tasks/t-1:cancel", NOT_ALLOWED),
    ("TRACE", "tasks", NOT_ALLOWED),
    ("PROPFIND", "tasks", NOT_ALLOWED),
]
