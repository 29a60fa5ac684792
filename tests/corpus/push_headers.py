"""Values a push config's token or credentials may hold, and ones they may
not: each becomes a header of every notification (``X-A2A-Notification-Token``,
``Authorization: <scheme> <credentials>``), so a value http.client cannot send
— or would fold onto a new line — is refused when the config is made."""

from __future__ import annotations

#: (what it is, the value): refused at creation, in every dialect and binding.
HOSTILE: list[tuple[str, str]] = [
    ("CR", "tok\ren"),
    ("LF", "tok\nen"),
    ("CRLF", "tok\r\nen"),
    ("CRLF + header", "tok\r\nX-Injected: 1"),
    ("CRLF + space (folding)", "tok\r\n en"),
    ("NUL", "tok\x00en"),
    ("BOM", "\ufefftoken"),
    ("BOM inside", "tok\ufeffen"),
    ("non-Latin-1", "\u043a\u043b\u044e\u0447"),  # ключ
    ("emoji", "tok\U0001f511"),
    ("Latin-1 beyond ASCII", "caf\u00e9"),
    ("DEL", "tok\x7fen"),
    ("ESC", "tok\x1b[31m"),
    ("other control", "tok\x01en"),
    ("tab", "tok\ten"),
    ("line separator U+2028", "tok\u2028en"),
    ("NEL U+0085", "tok\x85en"),
    ("leading space", " zq9-token"),
    ("trailing space", "zq9-token "),
    ("only spaces", "   "),
]

#: Values that are sent as they are.
FINE: list[str] = [
    "opaque-to-check",
    "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",  # a JWT
    "dTpw",  # base64 "u:p"
    "dXNlcjpwYXNzd29yZA==",
    "a b c",  # spaces inside are kept as they are
    "!#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
]

__all__ = ["FINE", "HOSTILE"]
