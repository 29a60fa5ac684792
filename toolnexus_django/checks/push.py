"""``PUSH``: push notifications' allowlist, timing, threads and signing key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.checks import CheckMessage

from ..conf import setting_name
from ..keys import push_key
from ..push.addresses import METADATA_NAMES, refusal
from ..push.ssrf import RefusedURL, allowlist_entry
from .problems import problem
from .sections import dict_section, seconds, whole

#: (id, key, kind) of each number: "seconds" (> 0) or "whole" (an int >= 1).
NUMBERS = (
    ("E604", "TIMEOUT", "seconds"),
    ("E605", "RETRY_DELAY", "seconds"),
    ("E606", "MAX_RETRY_DELAY", "seconds"),
    ("E607", "MAX_ATTEMPTS", "whole"),
    ("E608", "THREADS", "whole"),
)


def check_push(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    push, errors = dict_section("PUSH", not_dict="E600", unknown="E601")
    if push is None:
        return errors
    hosts = push["ALLOWED_HOSTS"]
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(h, str) for h in hosts):
        where = setting_name("PUSH", "ALLOWED_HOSTS")
        errors.append(problem("E602", f"{where} must be a list of host names"))
    else:
        errors += _allowlist_entries(hosts)
    for code, key, kind in NUMBERS:
        value = push[key]
        if kind == "seconds" and not seconds(value):
            what = "a positive number of seconds"
        elif kind == "whole" and not whole(value):
            what = "an integer >= 1"
        else:
            continue
        errors.append(problem(code, f"{setting_name('PUSH', key)} must be {what}, not {value!r}"))
    if push.get("SIGNING_KEY"):
        try:
            push_key()
        except (OSError, ValueError, TypeError) as exc:
            errors.append(
                problem(
                    "E609",
                    f"{setting_name('PUSH', 'SIGNING_KEY')} cannot be used: {exc}",
                    hint="Give an EC P-256 private key in PEM, or the path of a PEM file.",
                )
            )
    return errors


def _allowlist_entries(hosts: Iterable[str]) -> list[CheckMessage]:
    """Each ALLOWED_HOSTS entry is read as a URL's host is (push.ssrf): one
    that is no host admits nothing; one that names a metadata service stays
    refused whatever the list says."""
    name = setting_name("PUSH", "ALLOWED_HOSTS")
    found: list[CheckMessage] = []
    for entry in hosts:
        if entry.strip() in ("", "*"):
            continue
        try:
            _, host, address = allowlist_entry(entry)
        except RefusedURL as exc:
            found.append(
                problem(
                    "E603",
                    f"{name} entry {entry!r} is not a host name, an address or a .suffix: {exc}",
                )
            )
            continue
        if host in METADATA_NAMES or (address is not None and refusal(address, allowed=True)):
            found.append(
                problem(
                    "W030",
                    f"{name} entry {entry!r} names a cloud metadata service: it stays refused",
                    hint="Metadata addresses are never called, whatever ALLOWED_HOSTS says.",
                )
            )
    return found
