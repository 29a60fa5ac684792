"""System checks of ``TOOLNEXUS["PUSH"]`` (push notifications)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.checks import CheckMessage, Error, Tags, Warning, register

from .conf import DEFAULTS, SETTING_NAME
from .section_checks import dict_section

KNOWN = tuple(DEFAULTS["PUSH"])


@register(Tags.compatibility)
def check_push(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    push, errors = dict_section("PUSH", "toolnexus_django.E006")
    if push is None:
        return errors
    hosts = push["ALLOWED_HOSTS"]
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(h, str) for h in hosts):
        errors.append(
            Error(
                f"{SETTING_NAME}['PUSH']['ALLOWED_HOSTS'] must be a list of host names",
                id="toolnexus_django.E006",
            )
        )
    else:
        errors += _allowlist_entries(hosts)
    for key in ("TIMEOUT", "RETRY_DELAY", "MAX_RETRY_DELAY"):
        value = push[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            errors.append(
                Error(
                    f"{SETTING_NAME}['PUSH'][{key!r}] must be a positive number of seconds",
                    id="toolnexus_django.E009",
                )
            )
    for key in ("MAX_ATTEMPTS", "THREADS"):
        value = push[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            errors.append(
                Error(
                    f"{SETTING_NAME}['PUSH'][{key!r}] must be an integer >= 1",
                    id="toolnexus_django.E009",
                )
            )
    if push.get("SIGNING_KEY"):
        from .push.signing import signing_key

        try:
            signing_key()
        except (OSError, ValueError, TypeError) as exc:
            errors.append(
                Error(
                    f"{SETTING_NAME}['PUSH']['SIGNING_KEY'] cannot be used: {exc}",
                    hint="Give an EC P-256 private key in PEM, or the path of a PEM file.",
                    id="toolnexus_django.E006",
                )
            )
    return errors


def _allowlist_entries(hosts: Iterable[str]) -> list[CheckMessage]:
    """Each ALLOWED_HOSTS entry is read as a URL's host is (push.ssrf): one
    that is no host admits nothing; one that names a metadata service stays
    refused whatever the list says."""
    from .push.addresses import METADATA_NAMES, refusal
    from .push.ssrf import RefusedURL, allowlist_entry

    name = f"{SETTING_NAME}['PUSH']['ALLOWED_HOSTS']"
    found: list[CheckMessage] = []
    for entry in hosts:
        if entry.strip() in ("", "*"):
            continue
        try:
            _, host, address = allowlist_entry(entry)
        except RefusedURL as exc:
            found.append(
                Error(
                    f"{name} entry {entry!r} is not a host name, an address or a .suffix: {exc}",
                    id="toolnexus_django.E006",
                )
            )
            continue
        if host in METADATA_NAMES or (address is not None and refusal(address, allowed=True)):
            found.append(
                Warning(
                    f"{name} entry {entry!r} names a cloud metadata service: it stays refused",
                    hint="Metadata addresses are never called, whatever ALLOWED_HOSTS says.",
                    id="toolnexus_django.W030",
                )
            )
    return found
