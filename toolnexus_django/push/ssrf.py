"""Which webhook URLs the server may call (SSRF safety).

A URL is checked when its config is created and again before every delivery,
after DNS resolution, against *every* address its host resolves to: only
``http`` / ``https``; never loopback, link-local, private, shared (CGNAT),
multicast, unspecified, reserved or cloud-metadata addresses — unless
``TOOLNEXUS["PUSH"]["ALLOWED_HOSTS"]`` names the host (or the address)
explicitly; metadata addresses stay refused whatever it says (``*``
included). An IPv6 address that embeds an IPv4 address (mapped, compatible,
NAT64, 6to4, Teredo, ...) is decided as that address too, and a host is read
as a resolver would read it — IDNA, numeric IPv4 forms (``0x7f.1``), a
trailing dot (:mod:`.addresses`). A delivery then connects to the address
that was checked, not to a second lookup of the name (no DNS rebinding
between check and connect).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from .addresses import METADATA_NAMES, IPAddress, numeric_ipv4, refusal

Resolver = Callable[[str, int], Iterable[str]]


class RefusedURL(ValueError):
    """A URL the server will not call; the message says why."""


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect, and what to say in the request."""

    url: str
    scheme: str
    host: str
    port: int
    path: str  # with its query
    address: str  # the checked IP to connect to


def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (IPv4 and IPv6)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


#: What a host name may hold once IDNA-encoded (underscores: internal names).
_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
#: What a path and query may hold: what goes on the request line as it is.
_PATH = re.compile(r"[\x21-\x7e]*")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


def allowlist_entry(raw: str) -> tuple[bool, str, IPAddress | None]:
    """An ``ALLOWED_HOSTS`` entry other than ``*``, read as a host is (IDNA,
    any IPv4 form): (a ``.suffix``?, the host, its address if it is one);
    RefusedURL when it is no host."""
    entry = str(raw).strip().lower()
    host, address = _host(entry.lstrip(".").strip("[]"))
    if entry.startswith(".") and address is not None:
        raise RefusedURL(f"{raw} is a .suffix of an address")
    return entry.startswith("."), host, address


def _allowed(host: str, literal: IPAddress | None, allowed_hosts: Iterable[str]) -> bool:
    """Whether the allowlist admits ``host``: ``*``, the host, or a
    ``.suffix`` of a name; an address entry admits that address however it
    is written."""
    for raw in allowed_hosts:
        if str(raw).strip() == "*":
            return True
        try:
            suffix, name, address = allowlist_entry(raw)
        except RefusedURL:
            continue  # not a host: admits nothing (check E603 reports it)
        if suffix:
            if literal is None and (host == name or host.endswith("." + name)):
                return True
        elif (address == literal) if address is not None else (literal is None and name == host):
            return True
    return False


def _host(hostname: str) -> tuple[str, IPAddress | None]:
    """The host as a resolver reads it (ASCII, no trailing dot) and its
    address when it is an IP literal in any form; RefusedURL when it is
    neither a name nor an address."""
    if ":" in hostname:  # only a bracketed IPv6 literal gets here with a colon
        if "%" in hostname:
            raise RefusedURL("a zone id (%...) is not allowed in a webhook URL")
        try:
            return hostname.lower(), ipaddress.IPv6Address(hostname)
        except ValueError:
            raise RefusedURL(f"{hostname} is not a valid IPv6 address") from None
    try:  # as getaddrinfo does: IDNA (fullwidth digits and dots become ASCII ones)
        host = hostname.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise RefusedURL(f"{hostname} is not a valid host name") from None
    host = host[:-1] if host.endswith(".") else host
    if not _NAME.fullmatch(host):
        raise RefusedURL(f"{hostname} is not a valid host name")
    try:
        return host, numeric_ipv4(host)
    except ValueError as exc:
        raise RefusedURL(f"{hostname} is not a valid host: {exc}") from None


_ALLOW_HINT = '; allow the host in TOOLNEXUS["PUSH"]["ALLOWED_HOSTS"] to call it'


def _explain(host: str, text: str, literal: bool, form: IPAddress | None, why: str) -> str:
    """What to say: <host> resolves to <address>, [which stands for <IPv4>,] <why>."""
    said = f"{host} resolves to {text}" if not literal else host
    if literal and host != text:
        said += f" ({text})"
    if form is not None and str(form) != text:
        return f"{said}, which stands for {form}, {why}"
    return f"{said}, {why}" if not literal else f"{said} is {why}"


def check_url(
    url: str,
    allowed_hosts: Iterable[str] = (),
    resolver: Resolver = resolve_host,
) -> Target:
    """The :class:`Target` of ``url``, or :class:`RefusedURL` saying why not."""
    if not isinstance(url, str) or not url or len(url) > 2048:
        raise RefusedURL("the URL must be a string of at most 2048 characters")
    if _CONTROL.search(url):  # urlsplit would drop some silently: the URL is refused
        raise RefusedURL("the URL has control characters or spaces (percent-encode them)")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RefusedURL(f"the URL is malformed: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise RefusedURL("only http and https URLs are called")
    if parts.username is not None or parts.password is not None:
        raise RefusedURL("credentials go in the config's authentication, not in the URL")
    if not parts.hostname:
        raise RefusedURL("the URL has no host")
    host, literal = _host(parts.hostname)
    port = port or (443 if scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not _PATH.fullmatch(path):
        raise RefusedURL(
            "the URL's path and query must be ASCII without spaces or control "
            "characters (percent-encode them)"
        )
    if host in METADATA_NAMES:
        raise RefusedURL(f"{host} is a cloud metadata host")
    allowed = _allowed(host, literal, allowed_hosts)
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = list(resolver(host, port))
        except (OSError, UnicodeError) as exc:
            raise RefusedURL(f"{host} does not resolve: {exc}") from None
        if not addresses:
            raise RefusedURL(f"{host} does not resolve")
    for text in addresses:
        try:
            found: tuple[IPAddress | None, str] | None = refusal(
                ipaddress.ip_address(text.split("%", 1)[0]), allowed=allowed
            )
        except ValueError:
            found = None, "not an IP address"
        if found is not None:
            hint = "" if allowed or found[1].endswith("metadata address") else _ALLOW_HINT
            raise RefusedURL(_explain(host, text, literal is not None, *found) + hint)
    return Target(url, scheme, host, port, path, addresses[0])


__all__ = ["RefusedURL", "Target", "allowlist_entry", "check_url", "resolve_host"]
