"""``A2A-Version`` values (header, query parameter, gRPC ``a2a-version``
metadata) with more digits than Python's ``int()`` reads (4,300), or digits
it reads that are not ASCII. The campaign's finding: a header of 5,000 digits
was -32603 / HTTP 500 / gRPC ``INTERNAL`` with a traceback in the log.

``REFUSED``: a version this server does not speak — -32009 (HTTP+JSON: 400
``VERSION_NOT_SUPPORTED``; gRPC: ``FAILED_PRECONDITION``), in every binding,
never a traceback. ``SERVED``: a spelling, however long, of a version it
speaks (-> the version). Each value is under 5,100 characters, within every
server's header limits and gRPC's 8 KiB of metadata."""

from __future__ import annotations

#: (what it is, the value).
REFUSED: list[tuple[str, str]] = [
    ("5,000 digits", "9" * 5000),
    ("4,301 ones", "1" * 4301),
    ("1 then 4,999 zeros", "1" + "0" * 4999),
    ("2 with a 5,000-digit minor", "2." + "9" * 5000),
    ("0 with a 5,000-digit minor", "0." + "3" * 5000),
    ("a 5,000-digit patch of 2.0", "2.0." + "7" * 5000),
    ("2,500 dots", "1." * 2500),
    ("a superscript two (str.isdigit holds)", "\u00b2"),
    ("Arabic-Indic one point zero", "\u0661.\u0660"),
]

#: (what it is, the value, the version it names).
SERVED: list[tuple[str, str, str]] = [
    ("1 with 4,999 leading zeros", "0" * 4999 + "1", "1.0"),
    ("1 with a 5,000-digit minor", "1." + "9" * 5000, "1.0"),
    ("1.0 with a 5,000-digit patch", "1.0." + "9" * 5000, "1.0"),
    ("0.3 with a minor of 5,001 digits", "0." + "0" * 5000 + "3", "0.3"),
]


def sendable(value: str, charset: str) -> bool:
    """Whether ``value`` can be a header in ``charset`` (HTTP: latin-1;
    gRPC metadata: printable ASCII)."""
    try:
        value.encode(charset)
    except UnicodeEncodeError:
        return False
    return True
