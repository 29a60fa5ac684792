"""One push config's record, for every store: its URL checked against the
settings, its fields when set, its form on the wire."""

from __future__ import annotations

from typing import Any

from ..a2a.pushconfig import PushConfigSpec, PushURLRefused, StoredPushConfig
from ..conf import toolnexus_settings
from . import secrets
from .ssrf import RefusedURL, check_url


def check(url: str) -> Any:
    """The checked target of ``url`` (raises :class:`PushURLRefused`)."""
    try:
        return check_url(url, toolnexus_settings.PUSH["ALLOWED_HOSTS"] or ())
    except RefusedURL as refused:
        raise PushURLRefused(str(refused)) from None


def config_values(
    owner: str | None, spec: PushConfigSpec, dialect: str, start: int
) -> dict[str, Any]:
    """A new (or replaced) config's fields, its secrets sealed, enabled, its
    notifications starting after event ``start`` — for every store."""
    return {
        "owner": owner or "",
        "dialect": dialect,
        "url": spec.url,
        "token": secrets.seal(spec.token),
        "auth_scheme": spec.scheme,
        "credentials": secrets.seal(spec.credentials),
        "delivered_seq": start,
        "failures": 0,
        "next_attempt_at": None,
        "disabled_at": None,
        "disabled_reason": "",
    }


def stored(row: Any) -> StoredPushConfig:
    """A config as the wire shows it (``row``: a PushConfig, or any object
    with its fields)."""
    return StoredPushConfig(
        task_id=row.task_id,
        config_id=row.config_id,
        url=row.url,
        token=secrets.unseal(row.token),
        scheme=row.auth_scheme,
        dialect=row.dialect,
        disabled=row.disabled_at is not None,
    )
