"""The signing keys: push notifications' (``PUSH["SIGNING_KEY"]``) and the
Agent Card's (``CARD_SIGNING_KEY``, else the push key), their public halves
as the JWKS served at ``<prefix>/.well-known/jwks.json``, and the compact
ES256 JWS both sign with.

A key setting is an EC P-256 private key in PEM, or the path of a PEM file.
Each public key is named by its RFC 7638 thumbprint (``kid``), which the
signatures' protected headers carry. (PyJWT signs and encodes the JWS and
the JWK, on ``cryptography``; only the thumbprint, which PyJWT does not
offer, is computed here.)
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt import api_jws
from jwt.algorithms import ECAlgorithm

from .conf import toolnexus_settings

ALGORITHM = "ES256"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _pem(setting: str) -> bytes:
    text = setting.strip()
    if text.startswith("-----BEGIN"):
        return text.encode()
    return Path(text).expanduser().read_bytes()


@functools.lru_cache(maxsize=4)
def load_key(setting: str) -> ec.EllipticCurvePrivateKey:
    """The private key a setting gives; ``OSError`` / ``ValueError`` for one
    that cannot be used (the system checks report it)."""
    key = serialization.load_pem_private_key(_pem(setting), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ValueError("it must be an EC P-256 private key (PEM) for ES256")
    return key


def push_key() -> ec.EllipticCurvePrivateKey | None:
    """The key notifications are signed with (None: they are not signed)."""
    setting = toolnexus_settings.PUSH.get("SIGNING_KEY")
    return load_key(str(setting)) if setting else None


def card_key() -> ec.EllipticCurvePrivateKey | None:
    """The key Agent Cards are signed with: ``CARD_SIGNING_KEY``; when that is
    None, the push key; False, or neither set: cards are not signed."""
    setting = toolnexus_settings.CARD_SIGNING_KEY
    if setting is None:
        return push_key()
    return load_key(str(setting)) if setting else None


def public_jwk(key: ec.EllipticCurvePrivateKey) -> dict[str, str]:
    """The public half of ``key`` as a JWK, its ``kid`` the RFC 7638 thumbprint
    (each call its own copy)."""
    return dict(_public_jwk(key))


@functools.lru_cache(maxsize=8)
def _public_jwk(key: ec.EllipticCurvePrivateKey) -> dict[str, str]:
    jwk: dict[str, str] = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    # RFC 7638: the SHA-256 of the required members, sorted, no spaces.
    required = {name: jwk[name] for name in ("crv", "kty", "x", "y")}
    canonical = json.dumps(required, separators=(",", ":"), sort_keys=True).encode()
    return {
        **required,
        "kid": b64url(hashlib.sha256(canonical).digest()),
        "alg": ALGORITHM,
        "use": "sig",
    }


def jwks() -> dict[str, Any]:
    """The key set notifications and cards verify against: each configured
    key once ({"keys": []} when nothing is signed)."""
    found: dict[str, dict[str, str]] = {}
    for key in (push_key(), card_key()):
        if key is not None:
            jwk = public_jwk(key)
            found.setdefault(jwk["kid"], jwk)
    return {"keys": list(found.values())}


def detached_jws(
    payload: bytes, key: ec.EllipticCurvePrivateKey, headers: dict[str, Any]
) -> tuple[str, str]:
    """(protected header, signature) of an ES256 JWS over ``payload`` whose
    header carries ``kid`` and ``headers``: the two parts an Agent Card's
    ``signatures`` entry holds (the payload is the card itself)."""
    header = {"kid": public_jwk(key)["kid"], **headers}
    token = api_jws.encode(payload, key, algorithm=ALGORITHM, headers=header)
    protected, _, signature = token.split(".")
    return protected, signature


__all__ = ["b64url", "card_key", "detached_jws", "jwks", "load_key", "public_jwk", "push_key"]
