"""Timestamps are read once, by Django's parse_datetime (stores.base.parse_instant):
what a Task, a lease or a client's filter may say, and what stays refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tests.corpus.hostile_params import BAD_TIMESTAMPS
from toolnexus_django.a2a import dialects
from toolnexus_django.a2a.jsonrpc import RpcError
from toolnexus_django.a2a.params import read_timestamp
from toolnexus_django.stores.base import parse_instant

PLUS_ONE = timezone(timedelta(hours=1))

READ = {
    "2026-01-02T03:04:05Z": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    "2026-01-02T03:04:05.5+01:00": datetime(2026, 1, 2, 3, 4, 5, 500000, tzinfo=PLUS_ONE),
    "2026-01-02 03:04:05+0100": datetime(2026, 1, 2, 3, 4, 5, tzinfo=PLUS_ONE),
    "2026-01-02T03:04": datetime(2026, 1, 2, 3, 4, tzinfo=UTC),  # naive means UTC
    "2026-01-02": datetime(2026, 1, 2, tzinfo=UTC),
    "20260102T030405Z": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
}

UNREAD = [
    "yesterday",
    "",
    "2026-13-01T00:00:00Z",  # well formed, no such month
    "2026-01-02T03:04:05Z\n",  # parse_datetime's pattern alone would take these
    " 2026-01-02T03:04:05Z",
    "\u0662\u0660\u0662\u0666-01-02T03:04:05Z",  # Arabic-Indic digits
    "\uff12\uff10\uff12\uff16-01-02T03:04:05Z",  # fullwidth digits
    "2026-01-02\u200903:04:05Z",  # Python's own parser took any separator
]


@pytest.mark.parametrize("text", READ)
def test_iso_instants_are_read_aware(text: str) -> None:
    moment = parse_instant(text)
    assert moment == READ[text] and moment is not None and moment.tzinfo is not None


@pytest.mark.parametrize("value", [*UNREAD, None, 1767225600, datetime(2026, 1, 2, tzinfo=UTC)])
def test_what_is_no_iso_text_is_none(value: object) -> None:
    assert parse_instant(value) is None


@pytest.mark.parametrize("text", READ)
def test_a_clients_timestamp_is_a_moment_in_utc(text: str) -> None:
    moment = read_timestamp(text, "statusTimestampAfter")
    assert moment == READ[text] and moment.utcoffset() == timedelta(0)


@pytest.mark.parametrize("text", [*UNREAD, *BAD_TIMESTAMPS.values()])
def test_a_clients_unreadable_or_out_of_range_timestamp_is_refused(text: str) -> None:
    with pytest.raises(RpcError) as refused:
        read_timestamp(text, "statusTimestampAfter")
    assert refused.value.code == -32602


def test_v1_renders_utc_with_z_and_leaves_out_what_utc_cannot_hold() -> None:
    assert dialects.timestamp("2026-01-02T03:04:05.5+01:00") == "2026-01-02T02:04:05.500Z"
    assert dialects.timestamp("2026-01-02T03:04:05") == "2026-01-02T03:04:05.000Z"
    assert dialects.timestamp("0001-01-01T00:00:00+01:00") is None  # before year 1 in UTC
    assert dialects.timestamp("yesterday") is None
