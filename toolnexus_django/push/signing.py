"""Signed notifications: a JWS (ES256) a receiver verifies with the server's
published key set, so it knows the notification came from this agent.

With ``TOOLNEXUS["PUSH"]["SIGNING_KEY"]`` (an EC P-256 private key in PEM, or
the path of a PEM file) every notification carries
``X-A2A-Notification-Signature: <compact JWS>`` whose claims are::

    {"iss": <ISSUER>, "iat": <now>, "exp": <now + 300>, "jti": "<task>:<event id>",
     "taskId": ..., "eventId": ..., "request_body_sha256": <base64url of the body's SHA-256>}

and whose header names the key (``kid``: its RFC 7638 thumbprint). The
public key is served as a JWKS at ``<prefix>/.well-known/jwks.json``
(:mod:`toolnexus_django.keys`, which also holds the Agent Card's key). A
receiver checks the signature against the key named by ``kid``, that ``exp``
has not passed, and that the body it got hashes to ``request_body_sha256``.
"""

from __future__ import annotations

import hashlib
import time

import jwt

from ..conf import toolnexus_settings
from ..keys import ALGORITHM, b64url, public_jwk, push_key

#: Seconds a signature stays valid.
LIFETIME = 300
HEADER = "X-A2A-Notification-Signature"


def sign(task_id: str, event_id: str, body: bytes, *, now: float | None = None) -> str | None:
    """The compact JWS for one notification, or None when not signing."""
    key = push_key()
    if key is None:
        return None
    issued = int(now if now is not None else time.time())
    claims = {
        "iss": str(toolnexus_settings.PUSH.get("ISSUER") or toolnexus_settings.AGENT.get("name")),
        "iat": issued,
        "exp": issued + LIFETIME,
        "jti": f"{task_id}:{event_id}",
        "taskId": task_id,
        "eventId": event_id,
        "request_body_sha256": b64url(hashlib.sha256(body).digest()),
    }
    return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": public_jwk(key)["kid"]})


__all__ = ["HEADER", "sign"]
