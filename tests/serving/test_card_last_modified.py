"""The Agent Card's Last-Modified (A2A v1.0 §8.6.1, a MAY) beside its ETag:
it changes when, and only when, the card's content (its ETag) does, never
moves back, and answers If-Modified-Since with 304 only where If-None-Match
is not sent (RFC 9110 §13.2.2) — on both edges, with no live server; and
the card's v0.3 protocolVersion is Major.Minor (§3.6)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client
from django.utils.http import http_date, parse_http_date

from tests.serving.test_asgi_app import CARD_PATH, call, scope
from toolnexus_django.a2a import card as card_module
from toolnexus_django.a2a.card import ChangeTimes, card_headers, not_modified
from toolnexus_django.asgi import AgentApplication

T0 = 1_800_000_000


@pytest.fixture(autouse=True)
def fresh_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's own change times (a test moving the clock leaves no trace)."""
    times = ChangeTimes()
    monkeypatch.setattr(card_module, "_changes", SimpleNamespace(get=lambda: times))


def test_a_slot_keeps_its_time_until_its_content_changes() -> None:
    times = ChangeTimes()
    assert times.since("a", '"1"', T0) == T0
    assert times.since("a", '"1"', T0 + 50) == T0  # the same content: unchanged
    assert times.since("b", '"9"', T0 + 50) == T0 + 50  # another slot, its own time
    assert times.since("a", '"2"', T0 + 60) == T0 + 60  # changed: now
    # Back to the first content: now again, never its old time (a client
    # holding "2" must not get a 304 for "1").
    assert times.since("a", '"1"', T0 + 70) == T0 + 70
    # Two changes within a second: still later than the one it replaced.
    assert times.since("a", '"3"', T0 + 70) == T0 + 71


def test_the_headers_leave_out_a_last_modified_later_than_now() -> None:
    first = card_headers(b'{"v": 1}', slot=("t1", None), now=T0)
    assert first["Last-Modified"] == http_date(T0)
    assert card_headers(b'{"v": 1}', slot=("t1", None), now=T0 + 5) == first
    # Changed twice in the same second: no Last-Modified until the clock catches up.
    card_headers(b'{"v": 2}', slot=("t1", None), now=T0 + 5)
    assert "Last-Modified" not in card_headers(b'{"v": 3}', slot=("t1", None), now=T0 + 5)
    assert card_headers(b'{"v": 3}', slot=("t1", None), now=T0 + 6)["Last-Modified"] == http_date(
        T0 + 6
    )
    assert "Last-Modified" not in card_headers(b'{"v": 1}')  # no slot: none


def test_if_none_match_takes_precedence_over_if_modified_since() -> None:
    modified = http_date(T0)
    assert not_modified(None, '"e"', http_date(T0), modified)
    assert not_modified(None, '"e"', http_date(T0 + 1), modified)
    assert not not_modified(None, '"e"', http_date(T0 - 1), modified)
    # If-None-Match decides wherever it is sent, whatever the date says.
    assert not not_modified('"other"', '"e"', http_date(T0 + 1), modified)
    assert not_modified('W/"e"', '"e"', http_date(T0 - 1), modified)
    # A date that is not one HTTP-date, or a card without Last-Modified: ignored.
    assert not not_modified(None, '"e"', "yesterday", modified)
    assert not not_modified(None, '"e"', f"{http_date(T0)}, {http_date(T0)}", modified)
    assert not not_modified(None, '"e"', http_date(T0), None)


def get_card(edge: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    if edge == "asgi":
        return call(AgentApplication(None), scope(CARD_PATH, "GET", **headers), b"")
    reply = Client().get(CARD_PATH, headers=headers)
    return reply.status_code, {k.lower(): v for k, v in reply.headers.items()}, reply.content


@pytest.mark.parametrize("edge", ["asgi", "wsgi"])
def test_the_card_answers_last_modified_and_if_modified_since(edge: str) -> None:
    status, headers, body = get_card(edge)
    assert status == 200 and b'"protocolVersion":"0.3"' in body.replace(b" ", b"")
    etag, modified = headers["etag"], headers["last-modified"]
    assert parse_http_date(modified) <= parse_http_date(headers.get("date", http_date()))
    # Asked again: the same content, so the same ETag and the same Last-Modified.
    again = get_card(edge)[1]
    assert (again["etag"], again["last-modified"]) == (etag, modified)
    status, headers, body = get_card(edge, if_modified_since=modified)
    assert status == 304 and body == b""
    assert (headers["etag"], headers["last-modified"]) == (etag, modified)
    earlier = http_date(parse_http_date(modified) - 1)
    assert get_card(edge, if_modified_since=earlier)[0] == 200
    # If-None-Match wins: a stale tag gets the card whatever the date says.
    assert get_card(edge, if_none_match='"stale"', if_modified_since=modified)[0] == 200
    assert get_card(edge, if_none_match=etag, if_modified_since=earlier)[0] == 304


@pytest.mark.parametrize("edge", ["asgi", "wsgi"])
def test_a_changed_card_is_modified_later(
    edge: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, headers, _ = get_card(edge)
    etag, modified = headers["etag"], headers["last-modified"]
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "AGENT": {**settings.TOOLNEXUS.get("AGENT", {}), "version": "9.9.9"},
    }
    later = time.time() + 100  # whatever second it is in: a later one
    monkeypatch.setattr(card_module, "time", SimpleNamespace(time=lambda: later))
    status, headers, _ = get_card(edge, if_modified_since=modified)
    assert status == 200 and headers["etag"] != etag
    assert parse_http_date(headers["last-modified"]) == int(later)
