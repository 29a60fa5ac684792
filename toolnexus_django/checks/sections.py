"""What the checks share: the setting as the user wrote it; a dict section
(``REVIEW``, ``PUSH``, ``MCP``) merged over its defaults, with the two
problems every section can have (not a dict, an unknown key); dotted paths
that must import; and the tests of a value (whole, seconds, addresses)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage
from django.core.exceptions import ImproperlyConfigured

from ..conf import DEFAULTS, MOVED, SETTING_NAME, import_path, merge, setting_name
from .problems import problem


def user_setting() -> dict[str, Any] | None:
    """``settings.TOOLNEXUS`` as written ({} when unset), or None when it is
    not a dict (E100 reports that; nothing else is checked then)."""
    raw = getattr(settings, SETTING_NAME, {})
    return raw if isinstance(raw, dict) else None


def dict_section(
    name: str, not_dict: str, unknown: str
) -> tuple[dict[str, Any] | None, list[CheckMessage]]:
    """Section ``name`` merged over its defaults (the keys that moved into it
    too), and the problems so far: ``not_dict`` if it is set to something
    other than a dict (then None: nothing else to check), ``unknown`` for the
    keys it does not take, listing the known ones (a key that moved within
    it is no stranger: W101 reports it)."""
    raw = user_setting()
    if raw is None:
        return None, []
    value = raw.get(name)
    if value is not None and not isinstance(value, dict):
        return None, [problem(not_dict, f"{setting_name(name)} must be a dict")]
    errors: list[CheckMessage] = []
    known = tuple(DEFAULTS[name])
    moved = {old[1] for old in MOVED if len(old) == 2 and old[0] == name}
    strangers = sorted(set(value or ()) - set(known) - moved, key=str)
    if strangers:
        errors.append(
            problem(
                unknown,
                f"{setting_name(name)} has unknown key(s): {', '.join(map(repr, strangers))}",
                hint=f"Known keys: {', '.join(known)}.",
            )
        )
    return merge(raw)[name], errors


def whole(value: Any, minimum: int = 1) -> bool:
    """An int (not a bool) >= ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def seconds(value: Any, *, zero: bool = False) -> bool:
    """A number (not a bool) > 0 (>= 0 with ``zero``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return value >= 0 if zero else value > 0


def addresses(value: Any) -> bool:
    """A list of e-mail addresses."""
    return isinstance(value, (list, tuple)) and all(isinstance(e, str) and "@" in e for e in value)


def importable(code: str, value: Any, *path: str | int) -> list[CheckMessage]:
    """``code`` if ``value`` is a dotted path that does not import."""
    try:
        import_path(value, setting_name(*path))
    except ImproperlyConfigured as e:
        return [problem(code, str(e), hint="Give the full dotted path to a module-level object.")]
    return []


def check_class_list(
    value: Any, not_list: str, unimportable: str, *path: str
) -> list[CheckMessage]:
    """A list of DRF classes or their dotted paths, or None (the default):
    ``not_list`` if it is neither, ``unimportable`` for each path that does not import."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        return [problem(not_list, f"{setting_name(*path)} must be a list, or None")]
    errors: list[CheckMessage] = []
    for i, entry in enumerate(value):
        errors += importable(unimportable, entry, *path, i)
    return errors
