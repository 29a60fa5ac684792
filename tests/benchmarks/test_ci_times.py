"""benchmarks/ci_times.py as shipped (in this process), on a small .ci/run log:
each step's time, each test run's count, directories and slowest tests."""

from __future__ import annotations

import runpy
from pathlib import Path

from tests.servers import ROOT

TIMES = runpy.run_path(str(ROOT / "benchmarks" / "ci_times.py"))

LOG = """\
== Environment  (t+0s)
== Set up .venv  (t+3s)
== Tests on SQLite: python3 -m venv .venv && .venv/bin/pytest  (t+40s)
2.50s call     tests/a2a/test_x.py::test_one[asgi]
1.50s call     tests/a2a/test_x.py::test_one[wsgi]
0.50s setup    tests/a2a/test_x.py::test_one[wsgi]
1.00s call     tests/test_layout.py::test_map
===== 3 passed, 1 skipped in 9.10s =====
== Tests on PostgreSQL (all but the tests marked once): DATABASE_URL=x  (t+55s)
4.00s teardown tests/e2e/test_crash.py::test_kill
===== 1 passed in 5.00s =====
== Summary  (t+70s)
"""


def test_it_reads_steps_runs_directories_and_the_slowest(tmp_path: Path) -> None:
    log = tmp_path / "ci.log"
    log.write_text(LOG)
    assert list(TIMES["steps"](LOG.splitlines())) == [
        ("Environment", 3),
        ("Set up .venv", 37),
        ("Tests on SQLite: python3 -m venv .venv && .venv/bin/pytest", 15),
        ("Tests on PostgreSQL (all but the tests marked once): DATABASE_URL=x", 15),
    ]
    sqlite, postgres = TIMES["runs"](LOG.splitlines())
    assert (sqlite.name, sqlite.wall, sqlite.counts) == ("SQLite", 9.1, "3 passed, 1 skipped")
    # A test's parameters and phases add up; top-level files are one row.
    assert sqlite.per_test["tests/a2a/test_x.py::test_one"] == 4.5
    assert dict(sqlite.per_directory()) == {"a2a": 4.5, "(tests/*.py)": 1.0}
    assert (postgres.name, dict(postgres.per_directory())) == ("PostgreSQL", {"e2e": 4.0})
    text = TIMES["report"](log, 1)
    assert "| `tests/a2a/test_x.py::test_one` | 4.5 |" in text
    assert "**PostgreSQL**: 1 passed in 5 s" in text


def test_two_runs_side_by_side(tmp_path: Path) -> None:
    before, after = tmp_path / "before.log", tmp_path / "after.log"
    before.write_text(LOG)
    after.write_text(LOG.replace("2.50s call     tests/a2a", "0.50s call     tests/a2a"))
    text = TIMES["compare"](before, after)
    assert "| SQLite | 3 passed, 1 skipped in 9 s | 3 passed, 1 skipped in 9 s |" in text
    assert "| a2a | 4 | - | 2 | - |" in text  # SQLite before, PostgreSQL before, after...
    assert "| e2e | - | 4 | - | 4 |" in text
