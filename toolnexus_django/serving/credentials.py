"""Verified credentials, remembered for a few seconds per process.

A peer that polls ``GetTask`` sends the same ``Authorization`` header with
every request, and DRF verifies it every time: a ``TokenAuthentication`` key
is a query (with its user: ~0.3 ms of CPU on SQLite), a
``BasicAuthentication`` password is a query and Django's password hash
(PBKDF2, 1,000,000 iterations in Django 5.2: about half a second of CPU per
request). Here a header that DRF's own ``BasicAuthentication`` or
``TokenAuthentication`` verified is remembered, keyed by a keyed hash of the
header and by the view's authentication classes, for
``CREDENTIAL_CACHE_SECONDS`` (``0``: never); a request carrying it within
that time is that user without asking DRF's classes again. Permissions and
throttles run as before, on every request.

The cost is the bound on revocation: a deleted token, a changed password, a
deactivated or deleted user is refused by every process at most
``CREDENTIAL_CACHE_SECONDS`` after the change, and at once by the process
that made it (its saves and deletes of users and tokens forget everything
here). Wrong credentials are never remembered: each costs DRF's whole check.
Sessions are not remembered either (a logout must end them at once, and
their CSRF check is per request); a project's own classes and subclasses
(they may read anything of the request) neither.
"""

from __future__ import annotations

import copy
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models.signals import post_delete, post_save
from rest_framework.authentication import (
    BasicAuthentication,
    TokenAuthentication,
    get_authorization_header,
)
from rest_framework.request import Request

from ..conf import toolnexus_settings

#: The classes whose verdict depends on the Authorization header and the
#: database alone (exactly these: a subclass may read more).
REMEMBERED: tuple[type, ...] = (BasicAuthentication, TokenAuthentication)
#: The most credentials a process remembers (the oldest is forgotten first).
MAX_REMEMBERED = 1024
#: Caches a user object fills as a request uses it (permissions): a
#: remembered caller starts each request without them, as a fresh one does.
PER_REQUEST = ("_perm_cache", "_user_perm_cache", "_group_perm_cache")


@dataclass(frozen=True)
class Verified:
    user: Any
    auth: Any
    authenticator: type
    until: float


class VerifiedCredentials:
    """A process's remembered credentials (thread-safe, bounded)."""

    def __init__(self) -> None:
        # Keyed hashes, not the headers: no password or token sits in memory
        # here, and nothing outside the process can compute a key.
        self._secret = secrets.token_bytes(32)
        self._entries: OrderedDict[tuple[Any, bytes], Verified] = OrderedDict()
        self._lock = threading.Lock()

    def _key(self, classes: tuple[type, ...], header: bytes) -> tuple[Any, bytes]:
        return classes, hmac.digest(self._secret, header, "sha256")

    def recall(self, classes: tuple[type, ...], header: bytes) -> Verified | None:
        key = self._key(classes, header)
        with self._lock:
            found = self._entries.get(key)
            if found is not None and found.until <= time.monotonic():
                del self._entries[key]
                return None
        return found

    def remember(self, classes: tuple[type, ...], header: bytes, verified: Verified) -> None:
        key = self._key(classes, header)
        with self._lock:
            self._entries[key] = verified
            self._entries.move_to_end(key)
            while len(self._entries) > MAX_REMEMBERED:
                self._entries.popitem(last=False)

    def forget(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


verified_credentials = VerifiedCredentials()


def _fresh(user: Any) -> Any:
    """A copy of ``user`` of its own, without what an earlier request cached on it."""
    user = copy.copy(user)
    for name in PER_REQUEST:
        user.__dict__.pop(name, None)
    return user


def authenticate_remembering(request: Request, authenticators: Sequence[Any] | None) -> None:
    """DRF's ``perform_authentication`` (``request.user``), answered from
    :data:`verified_credentials` where it can be and remembered where it may
    be (the module's docstring)."""
    seconds = float(toolnexus_settings.CREDENTIAL_CACHE_SECONDS or 0)
    header = get_authorization_header(request) if seconds > 0 else b""
    authenticators = authenticators or ()
    classes = tuple(type(a) for a in authenticators)
    if not header or not any(cls in REMEMBERED for cls in classes):
        request.user  # noqa: B018 - DRF authenticates on first access
        return
    found = verified_credentials.recall(classes, header)
    if found is not None:
        user = _fresh(found.user)
        auth = copy.copy(found.auth)
        if hasattr(auth, "_state") and "user" in auth._state.fields_cache:
            auth._state.fields_cache = {**auth._state.fields_cache, "user": user}
        # What DRF's Request._authenticate sets: the authenticator (its
        # successful_authenticator, read by DRF's views and ours), the user, the auth.
        authenticator = next(a for a in authenticators if type(a) is found.authenticator)
        setattr(request, "_authenticator", authenticator)  # noqa: B010 - DRF's own attribute
        request.user, request.auth = user, auth
        return
    user = request.user  # DRF's own check
    authenticator = request.successful_authenticator
    if type(authenticator) in REMEMBERED and user is not None and user.is_authenticated:
        until = time.monotonic() + seconds
        verified_credentials.remember(
            classes, header, Verified(_fresh(user), request.auth, type(authenticator), until)
        )


def _forget_on_change(sender: Any, **kwargs: Any) -> None:
    verified_credentials.forget()


def connect_signals() -> None:
    """Forget every remembered credential when this process saves or deletes
    a user or a DRF token (a password, ``is_active``, a revoked key)."""
    senders = [settings.AUTH_USER_MODEL]
    if "rest_framework.authtoken" in settings.INSTALLED_APPS:
        senders.append("authtoken.Token")
    for sender in senders:
        for signal in (post_save, post_delete):
            uid = f"toolnexus_django.credentials.{sender}"
            signal.connect(_forget_on_change, sender=sender, weak=False, dispatch_uid=uid)
