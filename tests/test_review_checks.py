"""System checks of ``TOOLNEXUS["REVIEW"]``: unknown keys (E001), values of
the wrong kind or out of range (E011), an escalation without a reminder
(E012), self-approval allowed (W011)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from toolnexus_django.review_checks import check_review

E001, E011, E012, W011 = (f"toolnexus_django.{n}" for n in ("E001", "E011", "E012", "W011"))


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
                "CLAIM_SECONDS": 60,
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
        ("not a dict", {E011}),
        ({"REMIND_BEFOR": 600}, {E001}),
        ({"CLAIM_SECONDS": 0}, {E011}),
        ({"CLAIM_SECONDS": "900"}, {E011}),
        ({"CLAIM_SECONDS": True}, {E011}),
        ({"APPROVALS": ["wire_money"]}, {E011}),
        ({"APPROVALS": {"wire_money": 0}}, {E011}),
        ({"APPROVALS": {"wire_money": "2"}}, {E011}),
        ({"EDIT_ARGUMENTS": "yes"}, {E011}),
        ({"REMIND_BEFORE": 0}, {E011}),
        ({"REMIND_BEFORE": -60}, {E011}),
        ({"REMIND_BEFORE": "1h"}, {E011}),
        ({"REMIND_BEFORE": 600, "ESCALATE_AFTER": 0}, {E011}),
        ({"REMIND_EMAILS": "team@example.com"}, {E011}),
        ({"REMIND_EMAILS": ["team"]}, {E011}),
        ({"ESCALATE_EMAILS": None}, {E011}),
        ({"ESCALATE_EMAILS": [1]}, {E011}),
        ({"ESCALATE_AFTER": 300}, {E012}),
        ({"ALLOW_SELF_APPROVAL": "yes"}, {E011}),
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
