"""Who is anonymous without asking DRF: a request that carries no credential
any of the endpoint's authentication classes reads.

DRF finds nobody in such a request, and the endpoint's permission classes
then admit or refuse an anonymous caller by the request's method alone. For
the classes whose every credential is known — DRF's ``BasicAuthentication``
and ``TokenAuthentication`` (the ``Authorization`` header) and
``SessionAuthentication`` (the session cookie) — and permissions that decide
by the method alone (``AllowAny``, ``IsAuthenticatedOrReadOnly``), that
answer is known before DRF runs: anonymous, admitted. Such a request skips
DRF and its database thread (measured: most of the CPU that configuring
authentication classes cost an anonymous GetTask; benchmarks/RESULTS.md).

Anything else goes through DRF as before: a header or a cookie to look up, a
method the permissions refuse to anonymous callers (DRF words the 401), a
class of the project's own or a subclass (it may read anything), throttles
(they count anonymous callers too) and a versioning class (it may refuse).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from http.cookies import CookieError
from typing import Any

from django.conf import settings
from django.http.cookie import parse_cookie
from rest_framework.authentication import (
    BasicAuthentication,
    SessionAuthentication,
    TokenAuthentication,
)
from rest_framework.permissions import SAFE_METHODS, AllowAny, IsAuthenticatedOrReadOnly
from rest_framework.views import APIView

#: Authentication classes (exactly these: a subclass may read more) whose
#: credential is the Authorization header; SessionAuthentication's is the cookie.
HEADER_CLASSES: tuple[type, ...] = (BasicAuthentication, TokenAuthentication)
ALL_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"})
#: Permission classes (exactly these) and the methods each admits an anonymous caller to.
ANONYMOUS_METHODS: dict[type, frozenset[str]] = {
    AllowAny: ALL_METHODS,
    IsAuthenticatedOrReadOnly: frozenset(SAFE_METHODS),
}


@dataclass(frozen=True)
class AnonymousPass:
    """The methods an anonymous caller is admitted to without DRF, and the
    session cookie that would make a request someone's (None: no class
    reads sessions)."""

    methods: frozenset[str]
    session_cookie: str | None

    def admits(self, method: str, headers: Iterable[tuple[str, str]]) -> bool:
        """Whether a request of ``method`` with ``headers`` (lower-case
        names) is anonymous and admitted, as DRF would find."""
        if method not in self.methods:
            return False
        for name, value in headers:
            if name == "authorization":
                return False
            if name == "cookie" and self.session_cookie is not None:
                try:
                    if self.session_cookie in parse_cookie(value):
                        return False
                except CookieError:  # DRF would see what Django parses: let it
                    return False
        return True


def anonymous_pass(
    authentication: Sequence[Any], permissions: Sequence[Any], view: type[APIView]
) -> AnonymousPass | None:
    """The :class:`AnonymousPass` of an endpoint with these classes, whose
    DRF view is ``view`` (its throttles and versioning, as DRF reads them),
    or None when every request must go through DRF (the module's docstring)."""
    if view.throttle_classes or view.versioning_class is not None:
        return None
    known = (*HEADER_CLASSES, SessionAuthentication)
    if any(cls not in known for cls in authentication):
        return None
    methods = ALL_METHODS
    for cls in permissions:
        admitted = ANONYMOUS_METHODS.get(cls)
        if admitted is None:
            return None
        methods &= admitted
    if not methods:
        return None
    sessions = SessionAuthentication in authentication
    return AnonymousPass(methods, settings.SESSION_COOKIE_NAME if sessions else None)


def asgi_headers(scope: Any) -> Iterable[tuple[str, str]]:
    """An ASGI scope's headers as :meth:`AnonymousPass.admits` reads them."""
    for name, value in scope.get("headers") or ():
        name = name.lower()  # ASGI servers should lower-case them; not all must
        if name in (b"authorization", b"cookie"):
            yield name.decode("latin-1"), value.decode("latin-1")
