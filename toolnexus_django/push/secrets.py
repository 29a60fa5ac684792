"""Push credentials at rest: encrypted with a key derived from ``SECRET_KEY``.

A config's token and its scheme's credentials are stored as Fernet tokens
(AES-128-CBC with HMAC-SHA256, from ``cryptography``) under a key derived
from ``settings.SECRET_KEY`` for this purpose alone (HKDF-SHA256). Rotating
``SECRET_KEY`` works as Django's own signing does: keep the old key in
``SECRET_KEY_FALLBACKS`` and stored credentials still decrypt.
"""

from __future__ import annotations

import base64
import functools

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

PURPOSE = b"toolnexus_django.push.credentials"


def _key(secret: str) -> bytes:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=PURPOSE).derive(
        secret.encode()
    )
    return base64.urlsafe_b64encode(derived)


@functools.lru_cache(maxsize=4)
def _fernet(secret: str, fallbacks: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(_key(k)) for k in (secret, *fallbacks)])


def _current() -> MultiFernet:
    fallbacks = tuple(getattr(settings, "SECRET_KEY_FALLBACKS", ()) or ())
    return _fernet(str(settings.SECRET_KEY), fallbacks)


def seal(value: str) -> str:
    """``value`` encrypted for storage ("" stays "")."""
    if not value:
        return ""
    return _current().encrypt(value.encode()).decode()


def unseal(value: str) -> str:
    """A stored value decrypted; "" when it is empty or no key opens it."""
    if not value:
        return ""
    try:
        return _current().decrypt(value.encode()).decode()
    except InvalidToken:
        return ""


__all__ = ["seal", "unseal"]
