"""``toolnexus_serve`` raises its soft open-file limit before its workers
fork (each stream is a descriptor), and says so — or says it could not and
what bound stays (toolnexus_django/serving/filelimit.py)."""

from __future__ import annotations

import io
import resource
from dataclasses import dataclass, field
from typing import Any

from toolnexus_django.management.commands.toolnexus_serve import Command
from toolnexus_django.serving.filelimit import UNLIMITED_TARGET, raise_open_files
from toolnexus_django.serving.server import ServeOptions


@dataclass
class Limits:
    """A ``resource`` module with this process's limits in its hands."""

    soft: int
    hard: int
    refuse: bool = False
    set_to: list[tuple[int, int]] = field(default_factory=list)
    RLIMIT_NOFILE = resource.RLIMIT_NOFILE
    RLIM_INFINITY = resource.RLIM_INFINITY

    def getrlimit(self, which: int) -> tuple[int, int]:
        assert which == self.RLIMIT_NOFILE
        return self.soft, self.hard

    def setrlimit(self, which: int, limits: tuple[int, int]) -> None:
        if self.refuse:
            raise ValueError("not allowed to raise the current limit")
        self.set_to.append(limits)


def test_the_soft_limit_is_raised_to_the_hard_one() -> None:
    limits = Limits(soft=1024, hard=524288)
    assert raise_open_files(limits) == (
        True,
        "Open files: raised the soft limit from 1024 to 524288 (one per stream)",
    )
    assert limits.set_to == [(524288, 524288)]


def test_an_unlimited_hard_limit_gets_a_large_finite_soft_one() -> None:
    limits = Limits(soft=1024, hard=resource.RLIM_INFINITY)
    assert raise_open_files(limits) is not None
    assert limits.set_to == [(UNLIMITED_TARGET, resource.RLIM_INFINITY)]


def test_nothing_is_said_when_the_soft_limit_is_already_the_hard_one() -> None:
    limits = Limits(soft=20000, hard=20000)
    assert raise_open_files(limits) is None and limits.set_to == []


def test_a_refused_raise_says_what_bound_stays_and_how_to_raise_it() -> None:
    raised, said = raise_open_files(Limits(soft=1024, hard=4096, refuse=True)) or (None, "")
    assert raised is False
    assert said.startswith("Open files: could not raise the soft limit from 1024 to 4096")
    assert "at most about 1024 connections and streams" in said and "ulimit -n" in said


def test_the_real_limit_of_this_process_is_raised_where_allowed() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 512), hard))
        said = raise_open_files()
        assert said is not None and said[0] is True
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == (
            UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
        )
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def banner(open_files: Any) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    command = Command(stdout=out, stderr=err)
    command.open_files = open_files
    command.banner(ServeOptions(host="127.0.0.1", port=8000))
    return out.getvalue(), err.getvalue()


def test_the_banner_says_what_was_done_and_a_refusal_goes_to_stderr() -> None:
    out, err = banner((True, "Open files: raised the soft limit from 1024 to 4096"))
    assert "Open files: raised the soft limit from 1024 to 4096" in out and err == ""
    out, err = banner((False, "Open files: could not raise the soft limit"))
    assert "Open files" not in out and "could not raise" in err
