"""System checks of TOOLNEXUS["MCP"] (toolnexus_django/checks/mcp.py), through
Django's real check registry and ``manage.py check``. (Before each problem had
its own id, E020 named E700-E712 and E001/E007 named E701, E706 and E708.)"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from tests.checks.test_checks import GOOD, ids_of, our_messages


@pytest.fixture
def mcp_ids(settings: Any) -> Any:
    """``mcp_ids(MCP value)``: the ids raised for GOOD with that MCP setting."""

    def run(mcp: Any, **overrides: Any) -> set[str]:
        settings.TOOLNEXUS = {**GOOD, "MCP": mcp, **overrides}
        return ids_of(our_messages())

    return run


def test_off_and_good_settings_raise_nothing(mcp_ids: Any) -> None:
    assert mcp_ids(None) == set()
    assert mcp_ids({"tools": None}) == set()
    assert mcp_ids({"tools": "__all__"}) == set()
    assert mcp_ids({"tools": ["skill", "file_expense"], "CALL_TIMEOUT": None}) == set()
    assert (
        mcp_ids(
            {
                "tools": [],
                "name": "desk",
                "version": "2",
                "AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
                "PERMISSION_CLASSES": [],
                "MAX_REQUEST_BYTES": 10,
                "CALL_TIMEOUT": 0.5,
                "MAX_CONCURRENT_CALLS": 1,
                "AUDIT": False,
            }
        )
        == set()
    )


def test_a_tool_the_toolkit_does_not_have_is_E021(mcp_ids: Any, settings: Any) -> None:
    assert mcp_ids({"tools": ["skill", "nope", "ask_requester"]}) == {"E021"}
    [message] = [m for m in our_messages() if m.id == "toolnexus_django.E021"]
    assert "'nope'" in message.msg and "'ask_requester'" in message.msg  # not in GOOD's toolkit
    assert "file_expense" in (message.hint or "")
    with pytest.raises(SystemCheckError, match="E021"):
        call_command("check")


@pytest.mark.parametrize(
    ("mcp", "expected"),
    [
        ("__all__", "E700"),
        ({"tools": "all"}, "E702"),
        ({"tools": [1, 2]}, "E702"),
        ({"tools": "__all__", "name": 3}, "E703"),
        ({"tools": "__all__", "AUTHENTICATION_CLASSES": "rest_framework.authentication.X"}, "E705"),
        ({"tools": "__all__", "MAX_REQUEST_BYTES": 0}, "E709"),
        ({"tools": "__all__", "MAX_CONCURRENT_CALLS": True}, "E710"),
        ({"tools": "__all__", "CALL_TIMEOUT": -1}, "E711"),
        ({"tools": "__all__", "AUDIT": "yes"}, "E712"),
    ],
)
def test_a_bad_value_is_E020(mcp_ids: Any, mcp: Any, expected: str) -> None:
    assert mcp_ids(mcp) == {expected}


def test_a_drf_class_that_does_not_import_is_E007(mcp_ids: Any) -> None:
    assert mcp_ids({"tools": "__all__", "PERMISSION_CLASSES": ["no.such.Permission"]}) == {"E708"}


def test_an_unknown_key_is_E001(mcp_ids: Any) -> None:
    assert mcp_ids({"tools": "__all__", "TIMEOUT": 3}) == {"E701"}


def test_a_toolkit_that_does_not_build_is_W020(mcp_ids: Any) -> None:
    toolkit = "tests.checks.test_mcp_checks.no_toolkit"
    assert mcp_ids({"tools": ["skill"]}, TOOLKIT=toolkit) == {"W020"}


def no_toolkit() -> Any:
    raise RuntimeError("no toolkit today")
