"""System checks of ``TOOLNEXUS["REVIEW"]``: unknown keys (E501; E001 before
each problem had its id), values of the wrong kind or out of range (E500,
E502-E510; E011 before), an escalation without a reminder (E012),
self-approval allowed (W011)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from toolnexus_django.checks import check_review

E012, W011 = (f"toolnexus_django.{n}" for n in ("E012", "W011"))


def _id(n: str) -> str:
    return f"toolnexus_django.{n}"


@pytest.fixture
def ids(settings: Any) -> Any:
    def run(review: Any) -> set[str]:
        settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": review}
        return {str(m.id) for m in check_review()}

    return run


def test_good_review_settings_pass(ids: Any) -> None:
    assert ids({}) == set()
    assert (
        ids(
            {
                "HOLD_SECONDS": 60,
                "APPROVALS": {"wire_money": 2},
                "EDIT_ARGUMENTS": False,
                "REMIND_BEFORE": 3600,
                "REMIND_EMAILS": None,
                "ESCALATE_AFTER": 1800.0,
                "ESCALATE_EMAILS": ["boss@example.com"],
                "ALLOW_SELF_APPROVAL": False,
            }
        )
        == set()
    )
    assert ids({"REMIND_BEFORE": 600, "REMIND_EMAILS": ["team@example.com"]}) == set()


@pytest.mark.parametrize(
    ("review", "expected"),
    [
        ("not a dict", {_id("E500")}),
        ({"REMIND_BEFOR": 600}, {_id("E501")}),
        ({"HOLD_SECONDS": 0}, {_id("E502")}),
        ({"HOLD_SECONDS": "900"}, {_id("E502")}),
        ({"HOLD_SECONDS": True}, {_id("E502")}),
        ({"APPROVALS": ["wire_money"]}, {_id("E503")}),
        ({"APPROVALS": {"wire_money": 0}}, {_id("E503")}),
        ({"APPROVALS": {"wire_money": "2"}}, {_id("E503")}),
        ({"EDIT_ARGUMENTS": "yes"}, {_id("E504")}),
        ({"REMIND_BEFORE": 0}, {_id("E506")}),
        ({"REMIND_BEFORE": -60}, {_id("E506")}),
        ({"REMIND_BEFORE": "1h"}, {_id("E506")}),
        ({"REMIND_BEFORE": 600, "ESCALATE_AFTER": 0}, {_id("E507")}),
        ({"REMIND_EMAILS": "team@example.com"}, {_id("E508")}),
        ({"REMIND_EMAILS": ["team"]}, {_id("E508")}),
        ({"ESCALATE_EMAILS": None}, {_id("E509")}),
        ({"ESCALATE_EMAILS": [1]}, {_id("E509")}),
        ({"ESCALATE_AFTER": 300}, {E012}),
        ({"ALLOW_SELF_APPROVAL": "yes"}, {_id("E505")}),
        ({"ALLOW_SELF_APPROVAL": True}, {W011}),
    ],
)
def test_bad_review_settings_are_reported(ids: Any, review: Any, expected: set[str]) -> None:
    assert ids(review) == expected


def test_the_review_check_is_registered_and_stops_manage_py_check(settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": {"ESCALATE_AFTER": 300}}
    assert E012 in {m.id for m in checks.run_checks(tags=["compatibility"])}
    with pytest.raises(SystemCheckError, match=r"toolnexus_django\.E012"):
        call_command("check")


def test_claim_seconds_is_read_as_hold_seconds_and_warned_as_moved(settings: Any) -> None:
    """Issue 20: a reviewer "holds" a Task; REVIEW["CLAIM_SECONDS"] is still
    honoured (where HOLD_SECONDS is not set), with W101 and no E501."""
    from toolnexus_django.checks import check_settings
    from toolnexus_django.conf import toolnexus_settings

    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": {"CLAIM_SECONDS": 60}}
    assert toolnexus_settings.REVIEW["HOLD_SECONDS"] == 60
    assert "CLAIM_SECONDS" not in toolnexus_settings.REVIEW
    found = [m for m in check_settings(None) if m.id.startswith("toolnexus_django")]
    assert [(m.id, m.msg) for m in found] == [
        (
            _id("W101"),
            "TOOLNEXUS['REVIEW']['CLAIM_SECONDS'] moved to TOOLNEXUS['REVIEW']['HOLD_SECONDS']:"
            " it is still read for now, unless that is set too",
        )
    ]

    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": {"CLAIM_SECONDS": 60, "HOLD_SECONDS": 5}}
    assert toolnexus_settings.REVIEW["HOLD_SECONDS"] == 5  # the new key wins


def test_a_bad_claim_seconds_is_e502_under_its_old_name(settings: Any) -> None:
    settings.TOOLNEXUS = {**settings.TOOLNEXUS, "REVIEW": {"CLAIM_SECONDS": 0}}
    [error] = check_review()
    assert (error.id, error.msg) == (
        _id("E502"),
        "TOOLNEXUS['REVIEW']['CLAIM_SECONDS'] must be a positive number of seconds, not 0",
    )
