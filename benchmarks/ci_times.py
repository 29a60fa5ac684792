"""Where CI's time goes, read from the output of ``.ci/run``.

Run CI with every test's time printed, then read its log::

    CI_DURATIONS=0 bash .ci/run > ci.log 2>&1
    python benchmarks/ci_times.py ci.log            # Markdown, for benchmarks/RESULTS.md
    python benchmarks/ci_times.py ci.log --before old.log   # the runs side by side

It prints each step's time (the ``== <step>  (t+Ns)`` headings), and for each
test run (SQLite, PostgreSQL, the newest pair) its wall time and test count,
the time its tests took per directory (summed over set-up, call and tear-down;
with several workers the sum is more than the wall time) and its slowest tests.
An older ``.ci/run`` prints no durations of its own: run it with
``PYTEST_ADDOPTS=--durations=0``.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

HEADING = re.compile(r"^== (?P<name>.*?)  \(t\+(?P<at>\d+)s\)$")
DURATION = re.compile(r"^(?P<seconds>[0-9.]+)s (?P<phase>setup|call|teardown)\s+(?P<test>\S+)")
SUMMARY = re.compile(r"=+ (?P<counts>.*?) in (?P<seconds>[0-9.]+)s")
#: The headings that start a test run, and what the tables call it.
RUNS = {"Tests on SQLite": "SQLite", "Tests on PostgreSQL": "PostgreSQL", "Newest pair": "newest"}


@dataclass
class Run:
    name: str
    wall: float = 0.0
    counts: str = ""
    per_test: Counter[str] = field(default_factory=Counter)

    def per_directory(self) -> Counter[str]:
        found: Counter[str] = Counter()
        for test, seconds in self.per_test.items():
            parts = test.split("::")[0].split("/")
            found[parts[1] if len(parts) > 2 else "(tests/*.py)"] += seconds
        return found


def steps(lines: list[str]) -> Iterator[tuple[str, int]]:
    """(step, seconds) for each heading, up to the next one."""
    marks = [(m["name"], int(m["at"])) for line in lines if (m := HEADING.match(line))]
    for (name, at), (_, then) in itertools.pairwise(marks):
        yield name, then - at


def runs(lines: list[str]) -> list[Run]:
    found: list[Run] = []
    current: Run | None = None
    for line in lines:
        heading = HEADING.match(line)
        if heading:
            named = [label for key, label in RUNS.items() if heading["name"].startswith(key)]
            current = Run(named[0]) if named else None
            if current is not None:
                found.append(current)
            continue
        if current is None:
            continue
        duration = DURATION.match(line)
        if duration:
            test = duration["test"].split("[")[0]  # a test's parameters together
            current.per_test[test] += float(duration["seconds"])
        summary = SUMMARY.search(line)
        if summary and ("passed" in summary["counts"] or "failed" in summary["counts"]):
            current.wall, current.counts = float(summary["seconds"]), summary["counts"]
    return found


def report(log: Path, top: int) -> str:
    lines = log.read_text(errors="replace").splitlines()
    out = ["| step | seconds |", "|---|---|"]
    out += [f"| {name} | {seconds} |" for name, seconds in steps(lines)]
    for run in runs(lines):
        out += ["", f"**{run.name}**: {run.counts} in {run.wall:.0f} s (pytest's own count).", ""]
        out += ["| directory | seconds |", "|---|---|"]
        out += [f"| {d} | {s:.1f} |" for d, s in run.per_directory().most_common()]
        out += ["", f"| {top} slowest | seconds |", "|---|---|"]
        out += [f"| `{t}` | {s:.1f} |" for t, s in run.per_test.most_common(top)]
    return "\n".join(out)


def compare(before: Path, after: Path) -> str:
    """Each run's count and wall time, and its tests' time per directory,
    before and after, side by side."""
    old = {r.name: r for r in runs(before.read_text(errors="replace").splitlines())}
    new = {r.name: r for r in runs(after.read_text(errors="replace").splitlines())}
    names = [n for n in RUNS.values() if n in old or n in new]
    out = ["| run | before | after |", "|---|---|---|"]
    for name in names:
        cells = [
            f"{r.counts} in {r.wall:.0f} s" if (r := side.get(name)) else "-" for side in (old, new)
        ]
        out.append(f"| {name} | {cells[0]} | {cells[1]} |")
    dirs = {d: 0.0 for side in (old, new) for r in side.values() for d in r.per_directory()}
    for side in (old, new):
        for r in side.values():
            for d, seconds in r.per_directory().items():
                dirs[d] += seconds
    header = [f"{n} {when}" for when in ("before", "after") for n in names]
    out += ["", "| directory | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    for d in sorted(dirs, key=dirs.__getitem__, reverse=True):
        row = [
            f"{side[n].per_directory()[d]:.0f}"
            if n in side and d in side[n].per_directory()
            else "-"
            for side in (old, new)
            for n in names
        ]
        out.append(f"| {d} | " + " | ".join(row) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="the output of .ci/run")
    parser.add_argument("--top", type=int, default=30, help="how many slowest tests (30)")
    parser.add_argument(
        "--before", type=Path, help="an earlier run's log: its runs and directories beside these"
    )
    args = parser.parse_args(argv)
    print(compare(args.before, args.log) if args.before else report(args.log, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
