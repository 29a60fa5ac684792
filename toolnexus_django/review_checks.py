"""System checks of ``TOOLNEXUS["REVIEW"]`` (review at team scale).

- ``toolnexus_django.E001``: a key REVIEW does not take.
- ``toolnexus_django.E011``: a value of the wrong kind or out of range.
- ``toolnexus_django.E012``: ``ESCALATE_AFTER`` without ``REMIND_BEFORE``
  (an escalation is timed from the reminder, so it would never be sent).
- ``toolnexus_django.W011``: ``ALLOW_SELF_APPROVAL`` is on: a reviewer may
  approve what they asked for themselves (no segregation of duties).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.checks import CheckMessage, Error, Tags, Warning, register

from .conf import DEFAULTS, SETTING_NAME
from .section_checks import dict_section

KNOWN = tuple(DEFAULTS["REVIEW"])
WHERE = f"{SETTING_NAME}['REVIEW']"


def _positive(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0


def _addresses(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(e, str) and "@" in e for e in value)


def _wrong(key: str, what: str) -> CheckMessage:
    return Error(f"{WHERE}[{key!r}] must be {what}", id="toolnexus_django.E011")


@register(Tags.compatibility)
def check_review(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    review, errors = dict_section("REVIEW", "toolnexus_django.E011")
    if review is None:
        return errors
    if not _positive(review["CLAIM_SECONDS"]):
        errors.append(_wrong("CLAIM_SECONDS", "a positive number of seconds"))
    approvals = review["APPROVALS"]
    if not isinstance(approvals, dict) or not all(
        isinstance(tool, str) and isinstance(n, int) and not isinstance(n, bool) and n >= 1
        for tool, n in approvals.items()
    ):
        errors.append(_wrong("APPROVALS", "a dict of tool name -> approvals needed (an int >= 1)"))
    for key in ("EDIT_ARGUMENTS", "ALLOW_SELF_APPROVAL"):
        if not isinstance(review[key], bool):
            errors.append(_wrong(key, "True or False"))
    if review["ALLOW_SELF_APPROVAL"] is True:
        errors.append(
            Warning(
                f"{WHERE}['ALLOW_SELF_APPROVAL'] is on: a reviewer may approve a request "
                "of a task they sent themselves",
                hint="Segregation of duties holds only with it off (the default): the "
                "requester of an approval then never approves it.",
                id="toolnexus_django.W011",
            )
        )
    for key in ("REMIND_BEFORE", "ESCALATE_AFTER"):
        if review[key] is not None and not _positive(review[key]):
            errors.append(_wrong(key, "None or a positive number of seconds"))
    if review["REMIND_EMAILS"] is not None and not _addresses(review["REMIND_EMAILS"]):
        errors.append(_wrong("REMIND_EMAILS", "None (REVIEW_NOTIFY_EMAILS) or a list of addresses"))
    if not _addresses(review["ESCALATE_EMAILS"]):
        errors.append(_wrong("ESCALATE_EMAILS", "a list of e-mail addresses"))
    user = review["EXPIRY_LOG_USER"]
    if user is not None and not (isinstance(user, str) and user):
        errors.append(_wrong("EXPIRY_LOG_USER", "None or a username"))
    if review["ESCALATE_AFTER"] is not None and review["REMIND_BEFORE"] is None:
        errors.append(
            Error(
                f"{WHERE}['ESCALATE_AFTER'] is set but REMIND_BEFORE is not: "
                "no escalation would ever be sent",
                hint="An escalation follows the reminder: set REMIND_BEFORE too.",
                id="toolnexus_django.E012",
            )
        )
    return errors
