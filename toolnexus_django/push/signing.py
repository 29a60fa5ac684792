"""Signed notifications: a JWS (ES256) a receiver verifies with the server's
published key set, so it knows the notification came from this agent.

With ``TOOLNEXUS["PUSH"]["SIGNING_KEY"]`` (an EC P-256 private key in PEM, or
the path of a PEM file) every notification carries
``X-A2A-Notification-Signature: <compact JWS>`` whose claims are::

    {"iss": <ISSUER>, "iat": <now>, "exp": <now + 300>, "jti": "<task>:<event id>",
     "taskId": ..., "eventId": ..., "request_body_sha256": <base64url of the body's SHA-256>}

and whose header names the key (``kid``: its RFC 7638 thumbprint). The
public key is served as a JWKS at ``<prefix>/.well-known/jwks.json``. A
receiver checks the signature against the key named by ``kid``, that ``exp``
has not passed, and that the body it got hashes to ``request_body_sha256``.
(PyJWT signs and encodes the JWS and the JWK, on ``cryptography``; only the
RFC 7638 thumbprint, which PyJWT does not offer, is computed here.)
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from ..conf import toolnexus_settings

#: Seconds a signature stays valid.
LIFETIME = 300
HEADER = "X-A2A-Notification-Signature"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _pem(setting: str) -> bytes:
    text = setting.strip()
    if text.startswith("-----BEGIN"):
        return text.encode()
    return Path(text).expanduser().read_bytes()


@functools.lru_cache(maxsize=4)
def _load(setting: str) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(_pem(setting), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ValueError("SIGNING_KEY must be an EC P-256 private key (PEM) for ES256")
    return key


def signing_key() -> ec.EllipticCurvePrivateKey | None:
    """The configured key (None: notifications are not signed)."""
    setting = toolnexus_settings.PUSH.get("SIGNING_KEY")
    return _load(str(setting)) if setting else None


def public_jwk(key: ec.EllipticCurvePrivateKey) -> dict[str, str]:
    jwk: dict[str, str] = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    # RFC 7638: the SHA-256 of the required members, sorted, no spaces.
    required = {name: jwk[name] for name in ("crv", "kty", "x", "y")}
    canonical = json.dumps(required, separators=(",", ":"), sort_keys=True).encode()
    return {
        **required,
        "kid": b64url(hashlib.sha256(canonical).digest()),
        "alg": "ES256",
        "use": "sig",
    }


def jwks() -> dict[str, Any]:
    """The key set receivers verify against ({"keys": []} when not signing)."""
    key = signing_key()
    return {"keys": [public_jwk(key)] if key is not None else []}


def sign(task_id: str, event_id: str, body: bytes, *, now: float | None = None) -> str | None:
    """The compact JWS for one notification, or None when not signing."""
    key = signing_key()
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
    return jwt.encode(claims, key, algorithm="ES256", headers={"kid": public_jwk(key)["kid"]})


__all__ = ["HEADER", "jwks", "public_jwk", "sign", "signing_key"]
