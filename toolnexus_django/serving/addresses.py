"""Addresses as ``toolnexus_serve`` reads them: ``[addr:]port``, the forms
Django's ``runserver`` accepts (HTTP's, and ``TOOLNEXUS["GRPC"]["ADDRESS"]``);
imported by the system checks too, so it imports nothing of the servers."""

from __future__ import annotations

import ipaddress
import re

DEFAULT_ADDR = "127.0.0.1"
DEFAULT_PORT = 8000

# Django's runserver accepts the same forms: "8000", "1.2.3.4:8000",
# "[::1]:8000", "localhost:8000".
_ADDRPORT = re.compile(
    r"""^(?:(?P<addr>
        (?P<ipv4>\d{1,3}(?:\.\d{1,3}){3}) |
        (?P<ipv6>\[[a-fA-F0-9:]+\]) |
        (?P<fqdn>[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*)
    ):)?(?P<port>\d+)$""",
    re.X,
)


def parse_addrport(value: str | None) -> tuple[str, int]:
    """``"[addr:]port"`` -> ``(host, port)``; IPv6 hosts come back without brackets.
    Raises ``ValueError`` with a message fit for the user."""
    if not value:
        return DEFAULT_ADDR, DEFAULT_PORT
    match = _ADDRPORT.match(value)
    if match is None:
        raise ValueError(f'"{value}" is not a valid port number or address:port pair.')
    port = int(match["port"])
    if not 0 < port < 65536:
        raise ValueError(f'"{match["port"]}" is not a valid port number (1-65535).')
    host = match["addr"] or DEFAULT_ADDR
    if match["ipv4"] or match["ipv6"]:
        host = host.strip("[]")
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f'"{match["addr"]}" is not a valid IP address.') from None
    return host, port


def netloc(host: str, port: int) -> str:
    """``host:port``, an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
