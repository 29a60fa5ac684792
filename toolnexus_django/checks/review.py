"""``REVIEW``: who is told a Task waits on a person, and review at team scale
(holds, four eyes, edits, reminders, escalation, self-approval)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.core.checks import CheckMessage

from ..conf import MOVED, setting_name, written
from .problems import problem
from .sections import addresses, dict_section, seconds, user_setting, whole


def _approvals(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(tool, str) and whole(n) for tool, n in value.items()
    )


def _base_url(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.startswith(("http://", "https://")))


def _optional(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or test(value)


#: (id, key, the test its value passes, what it must be) for each value.
VALUES: tuple[tuple[str, str, Callable[[Any], bool], str], ...] = (
    ("E511", "NOTIFY_EMAILS", addresses, "a list of e-mail addresses"),
    ("E512", "BASE_URL", _base_url, "an absolute http(s) URL, or None"),
    ("E502", "HOLD_SECONDS", seconds, "a positive number of seconds"),
    ("E503", "APPROVALS", _approvals, "a dict of tool name -> approvals needed (an int >= 1)"),
    ("E504", "EDIT_ARGUMENTS", lambda v: isinstance(v, bool), "True or False"),
    ("E505", "ALLOW_SELF_APPROVAL", lambda v: isinstance(v, bool), "True or False"),
    ("E506", "REMIND_BEFORE", _optional(seconds), "None or a positive number of seconds"),
    ("E507", "ESCALATE_AFTER", _optional(seconds), "None or a positive number of seconds"),
    ("E508", "REMIND_EMAILS", _optional(addresses), "None (NOTIFY_EMAILS) or a list of addresses"),
    ("E509", "ESCALATE_EMAILS", addresses, "a list of e-mail addresses"),
    (
        "E510",
        "EXPIRY_LOG_USER",
        _optional(lambda v: isinstance(v, str) and v != ""),
        "None or a username",
    ),
)


def check_review(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    review, errors = dict_section("REVIEW", not_dict="E500", unknown="E501")
    if review is None:
        return errors
    for code, key, holds, what in VALUES:
        if not holds(review[key]):
            errors.append(problem(code, f"{_where(key)} must be {what}, not {review[key]!r}"))
    if review["ALLOW_SELF_APPROVAL"] is True:
        errors.append(
            problem(
                "W011",
                f"{setting_name('REVIEW', 'ALLOW_SELF_APPROVAL')} is on: a reviewer may approve"
                " a request of a task they sent themselves",
                hint="Segregation of duties holds only with it off (the default): the "
                "requester of an approval then never approves it.",
            )
        )
    if review["ESCALATE_AFTER"] is not None and review["REMIND_BEFORE"] is None:
        errors.append(
            problem(
                "E012",
                f"{setting_name('REVIEW', 'ESCALATE_AFTER')} is set but REMIND_BEFORE is not: "
                "no escalation would ever be sent",
                hint="An escalation follows the reminder: set REMIND_BEFORE too.",
            )
        )
    return errors


def _where(key: str) -> str:
    """Where a REVIEW value was written: in REVIEW, or under its old key."""
    raw = user_setting() or {}
    if written(raw, ("REVIEW", key))[0]:
        return setting_name("REVIEW", key)
    old = [
        path for path, place in MOVED.items() if place == ("REVIEW", key) and written(raw, path)[0]
    ]
    return setting_name(*old[0]) if old else setting_name("REVIEW", key)
