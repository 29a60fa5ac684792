"""Webhook URL forms (push-notification SSRF), each with its verdict under
three allowlists: none (``alone``), one that names the URL's own host
(``named``), and ``*`` (``star``).

A verdict is ``OK`` (the URL may be called) or a word the refusal says
(``loopback``, ``metadata``, ...). Metadata stays refused under every
allowlist; a URL's host is read as a resolver reads it (IDNA, numeric IPv4
forms, a trailing dot), and an IPv6 address that embeds an IPv4 address is
decided as that address. A name resolves to ``resolves`` (the tests' resolver;
no DNS)."""

from __future__ import annotations

from dataclasses import dataclass

OK = "ok"
META = "metadata"


@dataclass(frozen=True)
class Case:
    url: str
    alone: str
    named: str
    star: str
    resolves: tuple[str, ...] = ()
    note: str = ""


def same(url: str, verdict: str, *resolves: str, note: str = "") -> Case:
    """A URL refused (or allowed) the same way under every allowlist."""
    return Case(url, verdict, verdict, verdict, resolves, note)


def private(url: str, why: str, *resolves: str, note: str = "") -> Case:
    """A URL refused with no allowlist, allowed once the allowlist admits it."""
    return Case(url, why, OK, OK, resolves, note)


PUBLIC = "93.184.216.34"

CASES: list[Case] = [
    # -- the campaign's forms: 6to4 with no allowlist at all ---------------------------
    private("http://[2002:7f00:1::]/", "stands for 127.0.0.1, a loopback", note="6to4 loopback"),
    same("http://[2002:a9fe:a9fe::]/", META, note="6to4 of 169.254.169.254"),
    # -- ... and mapped / NAT64 / compatible metadata under "*" --------------------------
    same("http://[::ffff:169.254.169.254]/", META, note="IPv4-mapped"),
    same("http://[::ffff:a9fe:a9fe]/", META, note="IPv4-mapped, in hex"),
    same("http://[64:ff9b::169.254.169.254]/", META, note="NAT64 well-known prefix"),
    same("http://[64:ff9b::a9fe:a9fe]/", META, note="NAT64 well-known prefix, hex"),
    same("http://[64:ff9b:1::a9fe:a9fe]/", META, note="NAT64 local-use /48, a /96 inside"),
    same("http://[64:ff9b:1:a9fe:a9:fe00::]/", META, note="NAT64 local-use as a /48 (RFC 6052)"),
    same("http://[::169.254.169.254]/", META, note="IPv4-compatible"),
    same("http://[::ffff:0:169.254.169.254]/", META, note="IPv4-translated (SIIT)"),
    same("http://[2001:0:4136:e378:8000:63bf:5601:5601]/", META, note="Teredo client XOR"),
    same("http://[fe80::5efe:a9fe:a9fe]/", META, note="ISATAP interface id"),
    # -- every metadata address, in several forms ----------------------------------------
    same("http://169.254.169.254/latest/meta-data/", META, note="AWS, GCP, Azure, ..."),
    same("http://169.254.170.2/v2/credentials", META, note="AWS ECS task credentials"),
    same("http://169.254.170.23/", META, note="AWS EKS Pod Identity"),
    same("http://169.254.0.23/", META, note="Tencent Cloud"),
    same("http://100.100.100.200/latest/meta-data/", META, note="Alibaba Cloud"),
    same("http://[::ffff:100.100.100.200]/", META, note="Alibaba, IPv4-mapped"),
    same("http://[64:ff9b::100.100.100.200]/", META, note="Alibaba, NAT64"),
    same("http://192.0.0.192/", META, note="Oracle Cloud (classic)"),
    same("http://168.63.129.16/", META, note="Azure WireServer (a public address)"),
    same("http://[fd00:ec2::254]/", META, note="AWS IPv6"),
    same("http://[fd00:ec2::23]/", META, note="AWS EKS Pod Identity IPv6"),
    same("http://[fd20:ce::254]/", META, note="GCP IPv6"),
    same("http://2852039166/", META, note="169.254.169.254 as one decimal number"),
    same("http://0xa9fea9fe/", META, note="... in hex"),
    same("http://0251.0376.0251.0376/", META, note="... in octal parts"),
    same("http://169.254.43518/", META, note="... with a 16-bit last part"),
    same("http://metadata.google.internal/", META, PUBLIC, note="by name, whatever it resolves to"),
    same("http://METADATA.google.internal./", META, PUBLIC, note="upper case, trailing dot"),
    same("http://metadata/", META, PUBLIC),
    same("http://instance-data/", META, PUBLIC),
    same("http://hooks.example/", META, PUBLIC, "169.254.169.254", note="one address of many"),
    same("http://hooks.example/", META, "64:ff9b::a9fe:a9fe", note="resolves to a NAT64 form"),
    # -- loopback and private, in odd forms -------------------------------------------
    private("http://127.0.0.1/", "loopback"),
    private("http://127.0.0.1./", "loopback", note="trailing dot"),
    private("http://2130706433/", "loopback", note="one decimal number"),
    private("http://0x7f.1/", "loopback", note="hex and a 24-bit last part"),
    private("http://017700000001/", "loopback", note="one octal number"),
    private("http://0177.0.0.1/", "loopback", note="octal first part"),
    private("http://127.1/", "loopback"),
    private(
        "http://\uff11\uff12\uff17\u3002\uff10\u3002\uff10\u3002\uff11/",
        "loopback",
        note="fullwidth digits and ideographic dots (IDNA)",
    ),
    private(
        "http://\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3/",
        "loopback",
        "127.0.0.1",
        note="circled letters: IDNA makes them 'localhost'",
    ),
    private("http://localhost/", "loopback", "127.0.0.1", "::1"),
    private("http://[::1]/", "loopback"),
    private("http://[::ffff:127.0.0.1]/", "loopback", note="IPv4-mapped loopback"),
    private("http://[64:ff9b::127.0.0.1]/", "stands for 127.0.0.1, a loopback", note="NAT64"),
    private("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "loopback", note="Teredo"),
    private("http://[2002:a00:1::]/", "stands for 10.0.0.1, a private", note="6to4 of 10/8"),
    private("http://10.0.0.1/", "private"),
    private("http://172.16.0.9/", "private"),
    private("http://192.168.1.1/", "private"),
    private("http://[fc00::1]/", "private"),
    private("http://[fe80::1]/", "link-local"),
    private("http://169.254.1.1/", "link-local"),
    private("http://100.64.0.1/", "shared"),
    private("http://224.0.0.1/", "multicast"),
    private("http://0.0.0.0/", "unspecified"),
    private("http://0/", "unspecified", note="0 is 0.0.0.0"),
    private("http://[::]/", "unspecified"),
    private("http://[2001:db8::1]/", "private", note="documentation prefix"),
    private("http://rebind.example/", "private", PUBLIC, "10.0.0.5", note="any address refused"),
    private("http://hooks.example/", "stands for 127.0.0.1", "2002:7f00:1::"),
    # -- URL tricks ---------------------------------------------------------------------
    same("http://a@127.0.0.1/", "credentials", note="userinfo"),
    same("http://hooks.example\\@127.0.0.1/", "credentials", note="backslash before @"),
    same("http://u:p@hooks.example/", "credentials", PUBLIC),
    private("http://127.0.0.1#@hooks.example/", "loopback", note="the host is 127.0.0.1"),
    private("http://127.0.0.1?@hooks.example/", "loopback"),
    same("http://[::1%25eth0]/", "zone id", note="IPv6 zone id"),
    same("http://[fe80::1%25lo]/", "zone id"),
    same("http://1.2.3.999/", "not a valid host", note="numeric, out of range"),
    same("http://1.2.3.4.5/", "not a valid host", note="numeric, five parts"),
    same("http://hooks.0x10/", "not a valid host", note="ends in a number, not an address"),
    same("http://hook s.example/", "spaces", note="a space in the host"),
    same("http://hook%20s.example/", "not a valid host name"),
    same("http://hooks.example/a b", "control characters", PUBLIC, note="a space"),
    same("http://hooks.example/a\r\nX-Injected: 1", "control", PUBLIC, note="CRLF in the path"),
    same("http://127.0.0.1\t/", "control", note="a tab urlsplit would drop"),
    same("http://hooks.example/\x00", "control", PUBLIC, note="NUL"),
    same("http://hooks.example/caf\u00e9", "path", PUBLIC, note="non-ASCII on the request line"),
    same("http://hooks.example:99999/", "malformed", PUBLIC),
    same("ftp://hooks.example/", "http and https", PUBLIC),
    same("file:///etc/passwd", "http and https"),
    same("gopher://127.0.0.1:25/", "http and https"),
    same("http:///nohost", "no host"),
    same("http://[127.0.0.1]/", "malformed", note="IPv4 in brackets"),
    # -- what may be called ---------------------------------------------------------------
    same("https://hooks.example/a2a?x=1&y=%0d%0a", OK, PUBLIC, note="encoded CRLF is just text"),
    same("http://1.1.1.1/", OK),
    same("http://[2606:4700:4700::1111]/", OK),
    same("http://[::ffff:1.1.1.1]/", OK, note="IPv4-mapped public: the IPv4 address"),
    private(
        "http://[2002:808:808::]/",
        "a 6to4 address",
        note="6to4 of a public address: 6to4 itself is refused (RFC 7526), on every Python",
    ),
    same("http://b\u00fccher.example/", OK, PUBLIC, note="IDNA name"),
    same("http://hooks.example./", OK, PUBLIC, note="trailing dot"),
]

__all__ = ["CASES", "META", "OK", "Case"]
