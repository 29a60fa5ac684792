"""What an address a webhook would reach is, for :mod:`.ssrf`: the IPv4
address behind each IPv6 form that embeds one, the numeric host forms a
resolver reads as IPv4, and whether an address is public or a cloud metadata
service's.

An IPv6 address that embeds an IPv4 address is decided as that IPv4 address
*and* as itself (refused if either is; an IPv4-mapped address only as the
IPv4 one, which is what a socket reaches): IPv4-mapped ``::ffff:a.b.c.d``,
IPv4-compatible ``::a.b.c.d``, IPv4-translated ``::ffff:0:a.b.c.d``, NAT64
``64:ff9b::/96`` (RFC 6052) and ``64:ff9b:1::/48`` (RFC 8215: the IPv4 address
may sit at any of RFC 6052's offsets, so each is decided), 6to4 ``2002::/16``,
Teredo ``2001::/32`` (the client: the last 32 bits XOR 0xffffffff) and ISATAP
(an interface id ``0:5efe`` or ``200:5efe``).
"""

from __future__ import annotations

import ipaddress
import re

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Cloud metadata services, refused whatever ``ALLOWED_HOSTS`` says (``*``
#: included): they hand out the machine's credentials.
METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle, Hetzner, ...
        "169.254.170.2",  # AWS ECS task credentials
        "169.254.170.23",  # AWS EKS Pod Identity
        "169.254.0.23",  # Tencent Cloud
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (classic)
        "168.63.129.16",  # Azure WireServer
        "fd00:ec2::254",  # AWS over IPv6
        "fd00:ec2::23",  # AWS EKS Pod Identity over IPv6
        "fd20:ce::254",  # GCP over IPv6
    )
)
#: Metadata host names, refused by name before any lookup (also for ``*``).
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
    }
)

_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.ip_network("::/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
_SHARED = ipaddress.ip_network("100.64.0.0/10")
#: Where RFC 6052 puts the IPv4 address's four bytes, per prefix length (byte 8 is "u").
_RFC6052_BYTES = {48: (6, 7, 9, 10), 56: (7, 9, 10, 11), 64: (9, 10, 11, 12), 96: (12, 13, 14, 15)}


def _v4(data: bytes) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(data)


def embedded(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 ``address`` stands for (none: it embeds none)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    raw = address.packed
    if int(address) <= 1:  # :: and ::1 are themselves, not IPv4-compatible forms
        return []
    if any(address in net for net in (_MAPPED, _TRANSLATED, _COMPATIBLE, _NAT64)):
        return [_v4(raw[12:])]
    if address in _NAT64_LOCAL:
        return [_v4(bytes(raw[i] for i in at)) for at in _RFC6052_BYTES.values()]
    if address in _SIX_TO_FOUR:
        return [_v4(raw[2:6])]
    if address in _TEREDO:
        return [_v4(bytes(b ^ 0xFF for b in raw[12:]))]
    if raw[8:12] in (b"\x00\x00\x5e\xfe", b"\x02\x00\x5e\xfe"):  # ISATAP
        return [_v4(raw[12:])]
    return []


def _why_not(address: IPAddress) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address in _SIX_TO_FOUR:
        # Whatever it embeds: 6to4 is deprecated (RFC 7526), and Python 3.13's
        # ipaddress counts 2002::/16 private where 3.11's counts it global —
        # one verdict on every Python.
        return "a 6to4 address"
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
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if not address.is_global:
        return "not a public address"
    return None


def refusal(address: IPAddress, *, allowed: bool) -> tuple[IPAddress, str] | None:
    """Why a webhook may not reach ``address``: (the form refused — the
    address or the IPv4 address it stands for —, why), or None: it may.
    ``allowed``: the allowlist admits the host, so only metadata is refused."""
    forms: list[IPAddress] = [*embedded(address)]
    if not (isinstance(address, ipaddress.IPv6Address) and address in _MAPPED):
        forms.append(address)  # a socket reaches an IPv4-mapped address as the IPv4 one
    for form in forms:
        if form in METADATA:
            return form, "a cloud metadata address"
    if allowed:
        return None
    for form in forms:
        why = _why_not(form)
        if why is not None:
            return form, why
    return None


_NUMBER = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")


def _number(label: str) -> int:
    if label[:2].lower() == "0x":
        return int(label[2:] or "0", 16)
    return int(label, 8 if label.startswith("0") else 10)


def numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """``host`` read as the C library's ``inet_aton`` (and so ``getaddrinfo``)
    reads it: one to four dot-separated numbers, each decimal, octal (a
    leading 0) or hex (0x), the last filling the remaining bytes —
    ``2130706433``, ``0x7f.1``, ``017700000001`` are all 127.0.0.1. None when
    ``host`` is a name; ValueError when it ends in a number but is no address
    (a resolver might read it either way)."""
    labels = host.split(".")
    if not _NUMBER.fullmatch(labels[-1]):
        return None
    if len(labels) > 4 or not all(_NUMBER.fullmatch(label) for label in labels):
        raise ValueError("it ends in a number but is not an IPv4 address")
    *head, last = [_number(label) for label in labels]
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        raise ValueError("a part of the IPv4 address is out of range")
    number = last
    for index, value in enumerate(head):
        number += value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


__all__ = ["METADATA", "METADATA_NAMES", "embedded", "numeric_ipv4", "refusal"]
