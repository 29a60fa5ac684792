"""The suite's time budget (tests/budget.py): a test whose phase runs past its
bound fails, naming the phase; a marked test gets the bound it asks for, and
must say why. Run on small suites of their own, in this process (pytester)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

#: The budget alone: the suite's other plugins (Django, Playwright) set up for the suite itself.
PLUGINS = (
    "-p",
    "no:django",
    "-p",
    "no:playwright",
    "-p",
    "no:base_url",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:anyio",
    "-p",
    "no:xdist",
    "-p",
    "tests.budget",
)

SUITE = """
import time

import pytest


def test_quick():
    pass


@pytest.mark.budget(seconds=0.01, reason="a probe with a tiny bound")
def test_past_its_bound():
    time.sleep(0.1)


@pytest.mark.budget(seconds=30, reason="a probe with room")
def test_within_its_bound():
    time.sleep(0.1)
"""


def test_a_phase_past_its_bound_fails_and_says_which(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_probe=SUITE)
    result = pytester.runpytest_inprocess(*PLUGINS)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_past_its_bound: its call took 0.* s, over the 0.01 s*"])


def test_no_budget_lifts_the_bound(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_probe=SUITE)
    pytester.runpytest_inprocess(*PLUGINS, "--no-budget").assert_outcomes(passed=3)


def test_a_longer_bound_must_say_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_probe="import pytest\n\n@pytest.mark.budget(seconds=90)\ndef test_x():\n    pass\n"
    )
    result = pytester.runpytest_inprocess(*PLUGINS)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*needs seconds=<number> and reason=<why>*"])
