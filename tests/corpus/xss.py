"""Text a peer, a model or a tool can put in a Task, written to run script if
a page rendered it as HTML instead of text (issue 18, item 1).

Each payload has ``MARK`` where its marker goes: :func:`text` puts a marker
naming the field and the payload there (``tnxpr03``: field ``pr``, payload 3),
so a leak says which field of which payload got through. A payload that got
through creates an element with an attribute named after its marker, or runs
script that reports the marker — to :data:`HOOK` or ``alert``, or in
``document.title`` — which is what :func:`survivors` (on the HTML) and the
browser test (hooking those in chromium) look for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html.parser import HTMLParser

#: The function a payload's script calls with its marker (the browser test defines it).
HOOK = "__tnxXss"

#: Where the marker goes in each payload.
MARK = "MARK"

PAYLOADS: tuple[str, ...] = (
    # The campaign's own: out of an attribute, into an element with a handler.
    'expense of 3 "><svg MARK onload=alert("MARK")>',
    f"<script>{HOOK}('MARK')</script>",
    f'<img MARK src=x onerror="{HOOK}(`MARK`)">',
    # Out of a double-quoted attribute, and out of a single-quoted one.
    f'" MARK autofocus onfocus="{HOOK}(/MARK/.source)" x="',
    f"' MARK autofocus onfocus='{HOOK}(/MARK/.source)' x='",
    # Out of the elements whose content is raw text.
    f"</textarea><svg MARK onload={HOOK}(/MARK/.source)>",
    f"</title></style></script><svg MARK onload={HOOK}(/MARK/.source)>",
    # Handlers that fire with nobody touching the page.
    f'"><details MARK open ontoggle={HOOK}(/MARK/.source)>',
    f'<iframe MARK srcdoc="<script>parent.{HOOK}(/MARK/.source)</script>"></iframe>',
    '"><svg MARK onload="document.title=/MARK/.source">',
    f"<svg><animate MARK onbegin={HOOK}(/MARK/.source) attributeName=x dur=1s>",
    # URLs that run script when followed: never a link's target.
    f"javascript:{HOOK}(/MARK/.source)//",
    f"java\tscript:{HOOK}(/MARK/.source)",
    f'<a MARK href="javascript:{HOOK}(/MARK/.source)">MARK</a>',
    # Entities that decode to markup if a page unescaped them before output.
    f"&lt;svg MARK onload={HOOK}(/MARK/.source)&gt;",
    # Template syntax: shown as written, never evaluated.
    '{{ "MARK"|add:"-evaluated" }}{% templatetag openblock %} {% debug %}',
)

#: What :func:`survivors` reports for a template payload that was evaluated.
EVALUATED = "-evaluated"


def marker(field: str, index: int) -> str:
    """The marker of payload ``index`` in ``field`` (two lowercase letters)."""
    assert re.fullmatch(r"[a-z]{2}", field), field
    return f"tnx{field}{index:02d}"


def payload(field: str, index: int) -> str:
    return PAYLOADS[index].replace(MARK, marker(field, index))


def text(field: str, indices: Iterable[int], limit: int | None = None) -> str:
    """The payloads ``indices`` for ``field``, one after the other (cut at
    ``limit`` characters, for fields that hold no more)."""
    joined = " ".join(payload(field, i) for i in indices)
    return joined if limit is None else joined[:limit]


def markers(fields: Iterable[str], indices: Iterable[int]) -> set[str]:
    return {marker(f, i) for f in fields for i in indices}


#: Attributes whose value a browser follows or loads as a URL or a document.
_URL_ATTRIBUTES = {"href", "src", "action", "formaction", "data", "xlink:href", "poster"}
_MARKER = re.compile(r"tnx[a-z]{2}\d{2}")


class _Finder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: set[str] = set()
        self._raw_text: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            value = value or ""
            if _MARKER.fullmatch(name):  # an attribute a payload made
                self.found.add(name)
            here = set(_MARKER.findall(value))
            if not here:
                continue
            if name.startswith("on") or name == "srcdoc":
                self.found |= here
            squeezed = re.sub(r"[\x00-\x20]", "", value).lower()
            if name in _URL_ATTRIBUTES and squeezed.startswith("javascript:"):
                self.found |= here
        if tag in ("script", "style"):
            self._raw_text = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._raw_text:
            self._raw_text = None

    def handle_data(self, data: str) -> None:
        if self._raw_text is not None:  # a payload's script, or markup inside a style
            self.found |= set(_MARKER.findall(data))
        for found in re.findall(r"(tnx[a-z]{2}\d{2})" + EVALUATED, data):
            self.found.add(found)


def survivors(page: str) -> set[str]:
    """The markers of payloads that survived in ``page`` as HTML: an
    attribute a payload made (every payload's element carries its marker as
    an attribute), a handler, ``srcdoc``, script or ``javascript:`` URL
    carrying a marker, or an evaluated template."""
    finder = _Finder()
    finder.feed(page)
    finder.close()
    if finder._raw_text is not None:  # a payload's <style> or <script> ran to the end
        finder.found |= set(_MARKER.findall(finder.rawdata))
    return finder.found
