"""The Agent Card's security fields, from the endpoint's DRF classes.

Security is declared the same way: ``securitySchemes`` maps each name to the
v0.3 (OpenAPI) object *plus* its v1.0 wrapper key, e.g. ``{"type": "http",
"scheme": "basic", "httpAuthSecurityScheme": {"scheme": "basic"}}`` (v0.3
readers ignore the wrapper; a v1.0 reader ignores the rest; the a2a-sdk pops
``type`` and wraps, and ignores the nested copy), and the requirements appear
as v0.3 ``security`` and v1.0 ``securityRequirements``: one per scheme, any one
suffices. The schemes are ``TOOLNEXUS["SECURITY_SCHEMES"]`` when set, else
derived from the endpoint's DRF authentication classes (:func:`scheme_for`).

The requirements say what the endpoint really requires. Derived schemes are
required only when the endpoint's permission classes refuse an anonymous
caller (:func:`admits_anonymous`); on an endpoint that lets anyone in (the
Install's ``AllowAny``) the card keeps ``securitySchemes`` — the ways a
caller *may* authenticate, to own its Tasks or read the extended card — and
declares no ``security`` / ``securityRequirements``. That is the A2A reading:
the card's ``securitySchemes`` are "the security scheme details used for
authenticating with this agent" and its ``securityRequirements`` the
"security requirements for contacting the agent", OpenAPI's Security
Requirement Objects, which name what a request must satisfy; no requirement
means none is needed. Schemes a project sets itself (``SECURITY_SCHEMES``)
are declared required, as before: it may know of a gate in front of the
endpoint (a proxy) that its permission classes do not show.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Sequence
from typing import Any

from ..conf import toolnexus_settings
from ..runtime.registry import PerProcess
from .cardsigning import V1_SCHEME_KEYS

logger = logging.getLogger("toolnexus_django.card")

#: (authentication classes, permission classes) -> the card's security fields
#: (cleared on reload).
_security: PerProcess[dict[tuple[tuple[Any, ...], tuple[Any, ...]], dict[str, Any]]] = PerProcess(
    "card security schemes", dict
)
_security_lock = threading.Lock()


def scheme_for(auth_class: Any) -> tuple[str, dict[str, Any]] | None:
    """The ``(name, v0.3 scheme)`` a DRF authentication class is declared as,
    or None for nothing:

    1. its own ``a2a_security_scheme(self)`` hook, when it has one (None = none);
    2. else its ``WWW-Authenticate`` challenge (``authenticate_header``):
       ``Basic`` -> HTTP basic, ``Bearer`` (simplejwt, TokenAuthentication with
       keyword "Bearer") -> HTTP bearer, any other word W (TokenAuthentication's
       "Token") -> an API key in the ``Authorization`` header, sent as "W <key>";
    3. no challenge (SessionAuthentication, RemoteUserAuthentication) -> None:
       a session also needs a CSRF token on every POST, which A2A clients do
       not send.
    """
    try:
        auth = auth_class()
        hook = getattr(auth, "a2a_security_scheme", None)
        if callable(hook):
            found = hook()
            if found is None:
                return None
            name, scheme = found
            if not isinstance(name, str) or not isinstance(scheme, dict):
                raise TypeError(f"returned {found!r}, not (name, scheme dict) or None")
            return name, scheme
        challenge = auth.authenticate_header(None)
    except Exception:
        # The card is public and served on every discovery: never fail it.
        logger.exception("no security scheme for %r", auth_class)
        return None
    word = str(challenge or "").split(" ", 1)[0]
    if word.lower() in ("basic", "bearer"):
        return word.lower(), {"type": "http", "scheme": word.lower()}
    if not word:
        return None
    return word.lower(), {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": f"Send the header `Authorization: {word} <key>`.",
    }


def both_forms(scheme: dict[str, Any]) -> dict[str, Any]:
    """A v0.3 scheme that also carries its v1.0 form under its wrapper key."""
    key = V1_SCHEME_KEYS.get(scheme.get("type", ""))
    if key is None:
        return dict(scheme)
    inner = {
        k: v
        for k, v in scheme.items()
        if k not in ("type", "in") and k not in V1_SCHEME_KEYS.values()
    }
    if "in" in scheme:
        inner["location"] = scheme["in"]
    return {**scheme, key: inner}


def endpoint_permission_classes() -> list[Any]:
    """The endpoint's DRF permission classes (``PERMISSION_CLASSES``, None =
    DRF's ``DEFAULT_PERMISSION_CLASSES``), as its edge reads them."""
    from rest_framework.settings import api_settings

    classes = toolnexus_settings.imported("PERMISSION_CLASSES")
    return list(api_settings.DEFAULT_PERMISSION_CLASSES) if classes is None else list(classes)


def admits_anonymous(permission_classes: Sequence[Any]) -> bool:
    """Whether these permission classes let an anonymous caller send (a POST
    with no credentials): each is asked, as DRF asks it, with such a request.
    A class that raises (it needs a view's queryset, say) counts as refusing:
    the card then declares what it cannot rule out."""
    from django.http import HttpRequest
    from rest_framework.request import Request
    from rest_framework.views import APIView

    plain = HttpRequest()
    plain.method = "POST"
    request = Request(plain)  # no authenticators: DRF's anonymous user
    view = APIView()
    try:
        return all(cls().has_permission(request, view) for cls in permission_classes)
    except Exception:
        logger.debug("a permission class failed on an anonymous request", exc_info=True)
        return False


def _derive_security(
    auth_classes: tuple[Any, ...], permission_classes: tuple[Any, ...]
) -> dict[str, Any]:
    configured = toolnexus_settings.SECURITY_SCHEMES
    schemes: dict[str, dict[str, Any]] = {}
    if configured is not None:
        # The setting replaces the derived schemes entirely ({} = declare none).
        for name, scheme in (configured if isinstance(configured, dict) else {}).items():
            if isinstance(scheme, dict):
                schemes[str(name)] = scheme
        if schemes != configured:
            logger.warning("TOOLNEXUS['SECURITY_SCHEMES'] is not a dict of dicts: ignored in part")
    else:
        for cls in auth_classes:
            found = scheme_for(cls)
            if found is not None:
                schemes.setdefault(*found)  # two bearer classes: one "bearer"
    if not schemes:
        return {}
    fields: dict[str, Any] = {
        "securitySchemes": {name: both_forms(s) for name, s in schemes.items()}
    }
    if configured is None and admits_anonymous(permission_classes):
        return fields  # ways to authenticate, none required
    return {
        **fields,
        "security": [{name: []} for name in schemes],
        "securityRequirements": [{"schemes": {name: {"list": []}}} for name in schemes],
    }


def security_fields(
    auth_classes: Sequence[Any], permission_classes: Sequence[Any] | None = None
) -> dict[str, Any]:
    """The card's ``securitySchemes`` / ``security`` / ``securityRequirements``
    for an endpoint with these authentication and permission classes ({} =
    none; ``permission_classes`` None: the endpoint's own). Derived once per
    distinct classes and setting; each call gets its own copy."""
    if permission_classes is None:
        try:
            permission_classes = endpoint_permission_classes()
        except Exception:  # a bad path (E113 says so): declare what may be required
            logger.debug("the endpoint's permission classes do not import", exc_info=True)
            permission_classes = [_Unknown]
    key = (tuple(auth_classes), tuple(permission_classes))
    cache = _security.get()
    with _security_lock:
        cached = cache.get(key)
        if cached is None:
            cached = cache[key] = _derive_security(*key)
    # A copy: callers (the a2a-sdk's parser, say) may mutate what they get.
    return copy.deepcopy(cached)


class _Unknown:
    """Stands for permission classes that cannot be read: refuses everyone."""

    def has_permission(self, request: Any, view: Any) -> bool:
        return False
