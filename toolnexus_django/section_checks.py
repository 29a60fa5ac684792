"""What the checks of a dict setting (``PUSH``, ``REVIEW``, ``MCP``) share:
its value merged over the defaults, and the errors every such setting can have."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error

from .conf import DEFAULTS, SETTING_NAME, merge, toolnexus_settings


def dict_section(name: str, not_dict_id: str) -> tuple[dict[str, Any] | None, list[CheckMessage]]:
    """A dict setting such as ``TOOLNEXUS["PUSH"]``: (its value merged over
    the defaults, the errors so far) — (None, ...) when it is unset or not a
    dict (then ``not_dict_id``). An unknown key in it is E001, listing the known."""
    raw = toolnexus_settings.user_settings.get(name)
    where = f"{SETTING_NAME}[{name!r}]"
    if raw is None:
        return None, []
    if not isinstance(raw, dict):
        return None, [Error(f"{where} must be a dict", id=not_dict_id)]
    known = tuple(DEFAULTS[name])
    unknown = sorted(set(raw) - set(known))
    errors: list[CheckMessage] = []
    if unknown:
        errors.append(
            Error(
                f"{where} has unknown key(s): {', '.join(map(repr, unknown))}",
                hint=f"Known keys: {', '.join(known)}.",
                id="toolnexus_django.E001",
            )
        )
    return merge({name: raw})[name], errors
