"""Which webhook URLs the server may call (SSRF safety).

A URL is checked when its config is created and again before every delivery,
after DNS resolution, against *every* address its host resolves to: only
``http`` / ``https``; never loopback, link-local, private, shared (CGNAT),
multicast, unspecified, reserved or cloud-metadata addresses — unless
``TOOLNEXUS["PUSH"]["ALLOWED_HOSTS"]`` names the host (or the address)
explicitly. A delivery then connects to the address that was checked, not to
a second lookup of the name (no DNS rebinding between check and connect).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

#: Addresses of cloud metadata services, refused even for an allowed host
#: (AWS/GCP/Azure/OpenStack, AWS IPv6, Alibaba, Oracle).
METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "192.0.0.192")
)
#: Metadata host names, refused by name before any lookup.
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata", "instance-data"})

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


def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (IPv4 and IPv6)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def _why_not(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return _why_not(address.ipv4_mapped)
    if address in METADATA:
        return "a cloud metadata address"
    for test, word in (
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local"),
        (address.is_multicast, "multicast"),
        (address.is_unspecified, "unspecified"),
        (address.is_private, "private"),
        (address.is_reserved, "reserved"),
    ):
        if test:
            return f"a {word} address"
    if isinstance(address, ipaddress.IPv4Address) and address in ipaddress.ip_network(
        "100.64.0.0/10"
    ):
        return "a shared (carrier-grade NAT) address"
    if not address.is_global:
        return "not a public address"
    return None


def _allowed(host: str, allowed_hosts: Iterable[str]) -> bool:
    host = host.lower().rstrip(".")
    for entry in allowed_hosts:
        entry = str(entry).lower().strip().rstrip(".")
        if not entry:
            continue
        if entry == "*" or entry == host:
            return True
        if entry.startswith(".") and (host.endswith(entry) or host == entry[1:]):
            return True
    return False


def check_url(
    url: str,
    allowed_hosts: Iterable[str] = (),
    resolver: Resolver = resolve,
) -> Target:
    """The :class:`Target` of ``url``, or :class:`RefusedURL` saying why not."""
    if not isinstance(url, str) or not url or len(url) > 2048:
        raise RefusedURL("the URL must be a string of at most 2048 characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RefusedURL(f"the URL is malformed: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise RefusedURL("only http and https URLs are called")
    host = (parts.hostname or "").lower()
    if not host:
        raise RefusedURL("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise RefusedURL("credentials go in the config's authentication, not in the URL")
    port = port or (443 if scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    allowed = _allowed(host, allowed_hosts)
    if host.rstrip(".") in METADATA_NAMES and not allowed:
        raise RefusedURL(f"{host} is a cloud metadata host")
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        literal = None
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
            address = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            continue
        if address in METADATA:
            raise RefusedURL(f"{host} resolves to {text}, a cloud metadata address")
    if not allowed:
        for text in addresses:
            try:
                why = _why_not(ipaddress.ip_address(text.split("%", 1)[0]))
            except ValueError:
                why = "not an IP address"
            if why is not None:
                raise RefusedURL(
                    f"{host} resolves to {text}, {why}; allow the host in "
                    'TOOLNEXUS["PUSH"]["ALLOWED_HOSTS"] to call it'
                )
    return Target(url, scheme, host, port, path, addresses[0])


__all__ = ["RefusedURL", "Target", "check_url", "resolve"]
