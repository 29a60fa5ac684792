"""The suite's time budget (issue 30): no phase of a test — its set-up, its
call, its tear-down — may take more than :data:`TEST_SECONDS`. A test past it
fails, naming the phase and its time, so CI's time cannot grow unseen one
slow test at a time. A test that must be long says so, and why::

    @pytest.mark.budget(seconds=120, reason="builds a fresh venv for each Python")

A session- or module-scoped fixture's set-up counts against the first test
that asks for it: share a set-up, and it is paid (and counted) once.
``--no-budget`` lifts the bound (a profiler, a debugger, a loaded machine).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

#: The longest any phase of one test may take, in seconds.
TEST_SECONDS = 60.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-budget",
        action="store_true",
        help=f"let a test's phases take longer than {TEST_SECONDS:g} s (tests/budget.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "budget(seconds, reason): this test's phases may each take up to `seconds` "
        f"(default {TEST_SECONDS:g}); say why it must be long",
    )


def allowed(item: pytest.Item) -> float:
    """The seconds each phase of ``item`` may take."""
    marker = item.get_closest_marker("budget")
    if marker is None:
        return TEST_SECONDS
    seconds = marker.kwargs.get("seconds")
    if not isinstance(seconds, int | float) or not marker.kwargs.get("reason"):
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.budget needs seconds=<number> and reason=<why>"
        )
    return float(seconds)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.passed or item.config.getoption("--no-budget"):
        return
    limit = allowed(item)
    if report.duration > limit:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid}: its {report.when} took {report.duration:.1f} s, over the "
            f"{limit:g} s a test's phase may take (tests/budget.py). Make it faster, share "
            "what it sets up, or mark it @pytest.mark.budget(seconds=..., reason=...)."
        )
