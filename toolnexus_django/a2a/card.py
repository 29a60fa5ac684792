"""The Agent Card, built from the toolkit's SKILL.md skills (never raw tools).

One card for every client: the legacy ``url`` / ``protocolVersion`` /
``preferredTransport`` fields that toolnexus's outbound client and A2A v0.3
clients read, plus ``supportedInterfaces`` for v1.0 clients: the JSON-RPC
endpoint once per protocol version it speaks (the official a2a-sdk client
picks the 1.0 entry, or the 0.3 one for its compat transport) and the
HTTP+JSON binding (v1.0) under the same URL.

Authenticated callers may get an extended card (``EXTENDED_AGENT_CARD``,
:func:`authenticated_card`), announced here when the endpoint authenticates.
Both cards carry an ``ETag``, a ``Last-Modified`` and ``Cache-Control``
(:func:`card_headers`), and, with a card key, ``signatures`` (:mod:`.cardsigning`).

Its security fields (``securitySchemes``, ``security``, ``securityRequirements``)
say what the endpoint's DRF classes accept and require (:mod:`.cardsecurity`).
"""

from __future__ import annotations

import copy
import hashlib
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import toolnexus
from django.utils.http import http_date, parse_etags, parse_http_date_safe

from ..agent.runtime import skills_dirs
from ..conf import toolnexus_settings
from ..lifecycle.public import MEDIA_TYPES
from ..runtime.registry import PerProcess
from ..stores import get_task_store
from .cardsecurity import security_fields
from .cardsigning import signed
from .jsonrpc import AuthenticationRequired
from .pushconfig import keeps_configs

#: The legacy top-level ``protocolVersion`` (v0.3 clients read it): Major.Minor,
#: as v1.0 §3.6 asks of cards ("0.3.0" before; the a2a-sdk reads both).
PROTOCOL_VERSION = "0.3"
#: (protocolBinding, protocolVersion) of each entry of supportedInterfaces:
#: JSON-RPC at the endpoint in both versions, and the HTTP+JSON binding's
#: routes under the same URL (``<url>/message:send``, ...: a2a/rest.py).
INTERFACES = (("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3"))
#: How long a client or cache may keep a card before asking again (seconds).
CARD_MAX_AGE = 300

logger = logging.getLogger("toolnexus_django.card")


def _read_skills() -> list[dict[str, Any]]:
    dirs = skills_dirs()
    found = toolnexus.list_skills(dirs).skills if dirs else []
    wanted = toolnexus_settings.AGENT.get("skills")
    selected = [s for s in found if wanted is None or s.name in wanted]
    if not selected and wanted is None:
        return [agent_skill()]
    return [
        {
            "id": s.name,
            "name": s.name,
            "description": s.description or "",
            # v1.0 requires at least one tag.
            "tags": [s.name],
        }
        for s in sorted(selected, key=lambda s: s.name)
    ]


def agent_skill() -> dict[str, Any]:
    """The one skill of an agent without SKILL.md skills: the agent itself
    (clients such as toolnexus's ``agent()`` make one tool per skill, so a card
    with none would offer them nothing to call)."""
    agent = toolnexus_settings.AGENT
    name = str(agent.get("name") or "toolnexus-agent")
    return {
        "id": re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-") or "agent",
        "name": name,
        "description": str(agent.get("description") or f"Send {name} a task in plain words."),
        "tags": ["agent"],
    }


#: Read once per process, and again when settings change.
_skills = PerProcess("card skills", _read_skills)


def card_skills() -> list[dict[str, Any]]:
    """The card's skills: every SKILL.md under TOOLKIT["skills_dir"], filtered
    by AGENT["skills"]; with none at all (and no filter), the agent itself
    (:func:`agent_skill`). Each call gets its own copy: a card (an
    ``EXTENDED_AGENT_CARD`` hook, say) may change what it gets."""
    return copy.deepcopy(_skills.get())


def build_card(
    endpoint_url: str,
    auth_classes: Sequence[Any] = (),
    permission_classes: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """The Agent Card; ``endpoint_url`` is the absolute JSON-RPC endpoint,
    ``auth_classes`` and ``permission_classes`` its DRF classes (None: the
    endpoint's own, from the settings)."""
    agent = toolnexus_settings.AGENT
    card: dict[str, Any] = {
        "name": agent.get("name") or "toolnexus-agent",
        "description": agent.get("description") or "",
        "version": agent.get("version") or "0.1.0",
        "protocolVersion": PROTOCOL_VERSION,
        "url": endpoint_url,
        "preferredTransport": "JSONRPC",
        "supportedInterfaces": [
            {"url": endpoint_url, "protocolBinding": binding, "protocolVersion": version}
            for binding, version in INTERFACES
        ]
        + grpc_interface(),
        "capabilities": {"streaming": True, "pushNotifications": _pushes()},
        # Media types (v1.0 and v0.3 alike); a skill has none of its own.
        "defaultInputModes": list(MEDIA_TYPES),
        "defaultOutputModes": list(MEDIA_TYPES),
        "skills": card_skills(),
    }
    if agent.get("provider"):
        card["provider"] = agent["provider"]
    card.update(security_fields(auth_classes, permission_classes))
    if offers_extended_card(auth_classes):
        card["capabilities"]["extendedAgentCard"] = True  # v1.0
        card["supportsAuthenticatedExtendedCard"] = True  # v0.3
    return card


def grpc_interface() -> list[dict[str, Any]]:
    """The gRPC binding's entry (``TOOLNEXUS["GRPC"]``: its URL, else its
    address, the ``host:port`` a gRPC channel dials), when it is on."""
    grpc = toolnexus_settings.GRPC
    url = grpc.get("URL") or grpc.get("ADDRESS")
    return [{"url": str(url), "protocolBinding": "GRPC", "protocolVersion": "1.0"}] if url else []


def _pushes() -> bool:
    """Push notifications are offered where configs can be kept."""
    return keeps_configs(get_task_store())


# -- the extended Agent Card ----------------------------------------------------------


def offers_extended_card(auth_classes: Sequence[Any]) -> bool:
    """Whether the card announces an extended card: one is configured
    (``EXTENDED_AGENT_CARD``) and the endpoint can authenticate anyone."""
    return toolnexus_settings.EXTENDED_AGENT_CARD is not None and bool(auth_classes)


def authenticated_card(request: Any, card: dict[str, Any]) -> dict[str, Any]:
    """The default ``EXTENDED_AGENT_CARD``: the public card, saying it was
    served to an authenticated caller (an extension entry naming them).

    A project's own hook gets the same two arguments, e.g. a skill only
    users with a Django permission see::

        def extended_card(request, card):
            if request.user.has_perm("billing.view_invoice"):
                card["skills"].append({"id": "invoices", "name": "invoices",
                                       "description": "Finds invoices.", "tags": ["billing"]})
            return card
    """
    user = getattr(request, "user", None)
    name = user.get_username() if user is not None and hasattr(user, "get_username") else ""
    extensions = card["capabilities"].setdefault("extensions", [])
    extensions.append(
        {
            "uri": EXTENDED_CARD_EXTENSION,
            "description": f"The extended Agent Card, as served to {name or 'this caller'}.",
            "required": False,
            "params": {"authenticated": True},
        }
    )
    return card


#: The extension entry :func:`authenticated_card` adds.
EXTENDED_CARD_EXTENSION = "urn:toolnexus-django:extended-agent-card"


def extended_card_builder(
    request: Any, endpoint_url: str | Callable[[], str], auth_classes: Sequence[Any]
) -> Callable[[], dict[str, Any]] | None:
    """What builds the extended card for ``request``'s caller, or None when
    the agent offers none (:func:`offers_extended_card`). For a caller who is
    not authenticated it raises :class:`AuthenticationRequired` (v1.0 §13.3).
    ``endpoint_url`` may be what finds it: it is found only for a card built."""
    if not offers_extended_card(auth_classes):
        return None
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return _authentication_required
    make = toolnexus_settings.imported("EXTENDED_AGENT_CARD")

    def build() -> dict[str, Any]:
        url = endpoint_url() if callable(endpoint_url) else endpoint_url
        card = make(request, build_card(url, auth_classes))
        if not isinstance(card, dict):
            raise TypeError(f"EXTENDED_AGENT_CARD returned {type(card).__name__}, not a dict")
        return signed(card, url)

    return build


def _authentication_required() -> dict[str, Any]:
    raise AuthenticationRequired("The extended Agent Card is for authenticated callers")


# -- caching ------------------------------------------------------------------------


#: Cards whose last change each process remembers (:class:`ChangeTimes`).
TRACKED = 1024


class ChangeTimes:
    """When each card last changed, as this process saw it: per slot (the
    endpoint URL a card names, and the extended card's caller), the time
    (whole seconds) it first served the slot's current content — known by
    its ETag, so ``Last-Modified`` changes exactly when the ETag does, and
    it is always later than the one of the content it replaced (a client
    holding that one never gets a 304 for this one). A slot forgotten (past
    :data:`TRACKED`) or a new process starts again from now: later, never
    earlier."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: OrderedDict[Hashable, tuple[str, int]] = OrderedDict()

    def since(self, slot: Hashable, etag: str, now: int) -> int:
        with self._lock:
            seen = self._slots.pop(slot, None)
            if seen is None or seen[0] != etag:
                seen = (etag, now if seen is None else max(now, seen[1] + 1))
            self._slots[slot] = seen
            if len(self._slots) > TRACKED:
                self._slots.popitem(last=False)
            return seen[1]


#: Times, not settings: a changed card has a new ETag, so they outlive a change.
_changes = PerProcess("card change times", ChangeTimes, reload=False)


def card_headers(
    body: bytes, *, private: bool = False, slot: Hashable | None = None, now: float | None = None
) -> dict[str, str]:
    """``ETag`` and ``Cache-Control`` of a card's body (the extended card is
    the caller's own: private, and it varies with who asks), and with a
    ``slot`` (what the card is for: see :class:`ChangeTimes`) its
    ``Last-Modified`` — none while that would be later than ``now``
    (RFC 9110 §8.8.2.1: a card changing more than once a second)."""
    headers = {
        "ETag": '"' + hashlib.blake2s(body, digest_size=12).hexdigest() + '"',
        "Cache-Control": f"{'private' if private else 'public'}, max-age={CARD_MAX_AGE}",
    }
    if private:
        headers["Vary"] = "Authorization, Cookie"
    if slot is not None:
        second = int(time.time() if now is None else now)
        since = _changes.get().since((private, slot), headers["ETag"], second)
        if since <= second:
            headers["Last-Modified"] = http_date(since)
    return headers


def not_modified(
    if_none_match: str | None,
    etag: str,
    if_modified_since: str | None = None,
    last_modified: str | None = None,
) -> bool:
    """Whether a GET or HEAD of a card is answered 304 (RFC 9110 §13.2.2):
    ``If-None-Match`` decides wherever it is sent (weak comparison); without
    it, ``If-Modified-Since`` does where the card has a ``Last-Modified`` and
    the field is one valid HTTP-date (else it is ignored, §13.1.3)."""
    if if_none_match:
        tags = parse_etags(if_none_match)
        strip = etag.removeprefix("W/")
        return "*" in tags or any(t.removeprefix("W/") == strip for t in tags)
    asked = parse_http_date_safe(if_modified_since) if if_modified_since else None
    changed = parse_http_date_safe(last_modified) if last_modified else None
    return asked is not None and changed is not None and changed <= asked
