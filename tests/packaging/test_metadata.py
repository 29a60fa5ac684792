"""What the package says about itself, read from pyproject.toml, MANIFEST.in,
LICENSE and CHANGELOG.md (no build: tests/packaging/test_wheel.py builds and
installs). A package index shows these fields; the changelog names every
check id, setting and module path a release retired or moved."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from toolnexus_django.checks import PROBLEMS, RETIRED_IDS
from toolnexus_django.conf import MOVED, RETIRED

ROOT = Path(__file__).resolve().parents[2]
HOME = "https://github.com/toolnexus-django/toolnexus-django"


@pytest.fixture(scope="module")
def project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def changelog() -> str:
    return (ROOT / "CHANGELOG.md").read_text()


def test_the_build_backend_understands_license_files(project: dict[str, Any]) -> None:
    """PEP 639's ``license`` expression with ``license-files`` needs setuptools 77."""
    (requirement,) = (Requirement(r) for r in project["build-system"]["requires"])
    assert requirement.name == "setuptools"
    assert "76.1.0" not in requirement.specifier
    assert "77.0.3" in requirement.specifier
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"


def test_the_license_is_mit_and_ships_as_a_file(project: dict[str, Any]) -> None:
    meta = project["project"]
    assert meta["license"] == "MIT"
    assert meta["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the toolnexus-django developers" in text
    # PEP 639: no License :: classifier beside a license expression.
    assert [c for c in meta["classifiers"] if c.startswith("License ::")] == []


def test_the_author_is_the_project_not_a_placeholder(project: dict[str, Any]) -> None:
    assert project["project"]["authors"] == [{"name": "The toolnexus-django developers"}]


def test_the_urls_lead_to_the_project(project: dict[str, Any]) -> None:
    assert project["project"]["urls"] == {
        "Homepage": HOME,
        "Documentation": "https://toolnexus-django.readthedocs.io/",
        "Repository": HOME,
        "Changelog": f"{HOME}/blob/main/CHANGELOG.md",
        "Issues": f"{HOME}/issues",
    }


def test_the_classifiers_say_what_the_dependencies_allow(project: dict[str, Any]) -> None:
    meta = project["project"]
    classifiers = meta["classifiers"]
    assert len([c for c in classifiers if c.startswith("Development Status ::")]) == 1
    assert "Typing :: Typed" in classifiers
    assert (ROOT / "toolnexus_django" / "py.typed").is_file()
    assert "Environment :: Web Environment" in classifiers
    assert "Intended Audience :: Developers" in classifiers
    assert any(c.startswith("Topic ::") for c in classifiers)
    assert any(c.startswith("Operating System ::") for c in classifiers)

    # Framework :: Django :: X.Y for exactly the feature releases the Django pin admits.
    (django,) = (Requirement(r) for r in meta["dependencies"] if Requirement(r).name == "Django")
    candidates = [f"{major}.{minor}" for major in (4, 5, 6, 7) for minor in range(3)]
    admitted = {v for v in candidates if f"{v}.0" in django.specifier}
    assert admitted == {"5.2", "6.0", "6.1"}
    prefix = "Framework :: Django :: "
    assert {c.removeprefix(prefix) for c in classifiers if c.startswith(prefix)} == admitted

    # Programming Language :: Python :: 3.X for exactly what requires-python admits.
    python = SpecifierSet(meta["requires-python"])
    prefix = "Programming Language :: Python :: 3."
    listed = {c.removeprefix(prefix) for c in classifiers if c.startswith(prefix)}
    assert listed == {"11", "12", "13"}
    assert all(f"3.{minor}.0" in python for minor in listed)
    assert "3.10.0" not in python


def test_the_wheel_carries_every_data_file_of_the_package(project: dict[str, Any]) -> None:
    """Every non-module file under toolnexus_django/ matches a package-data glob
    (the slow test checks the built wheel itself)."""
    globs = project["tool"]["setuptools"]["package-data"]["toolnexus_django"]
    assert {"templates/**/*", "static/**/*", "py.typed"} <= set(globs)
    package = ROOT / "toolnexus_django"
    data = [
        p.relative_to(package)
        for p in package.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]
    assert data, "no templates, static files or py.typed found"
    patterns = [re.compile(glob_regex(g)) for g in globs]
    assert [str(p) for p in data if not any(r.fullmatch(p.as_posix()) for r in patterns)] == []


def glob_regex(glob: str) -> str:
    """setuptools' package-data glob as a regex (PurePath.full_match is 3.13's)."""
    parts = re.split(r"(\*\*/|\*)", glob)
    table = {"**/": "(?:.*/)?", "*": "[^/]*"}
    return "".join(table.get(part, re.escape(part)) for part in parts)


def test_the_sdist_rules_leave_the_tests_out() -> None:
    """MANIFEST.in: the package, LICENSE, README and CHANGELOG; no tests (they
    need the demo project, its fakes and real servers, so they run from a
    checkout) and nothing else of the repository."""
    rules = [
        line.split()
        for line in (ROOT / "MANIFEST.in").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    pruned = {rule[1] for rule in rules if rule[0] == "prune"}
    assert {"tests", "testproject", "benchmarks", "docs", ".ci"} <= pruned
    included = {name for rule in rules if rule[0] == "include" for name in rule[1:]}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"} <= included
    assert ["graft", "toolnexus_django"] in rules


def releases(changelog: str) -> list[str]:
    return re.findall(r"^## \[([^\]]+)\]", changelog, re.M)


def test_the_changelog_keeps_a_changelog(changelog: str) -> None:
    assert changelog.startswith("# Changelog\n")
    names = releases(changelog)
    assert names and names[0] == "Unreleased"
    assert re.findall(r"^## ", changelog, re.M) == ["## "] * len(names), "a release without [ ]"
    for name in names:  # each heading's link reference, at the bottom
        assert re.search(rf"^\[{re.escape(name)}\]: https://\S+$", changelog, re.M), name
    allowed = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    allowed |= {"Breaking changes", "Retired check ids"}
    for release in re.split(r"^## ", changelog, flags=re.M)[1:]:
        kinds = re.findall(r"^### (.+)$", release, re.M)
        assert len(kinds) == len(set(kinds)), f"a kind of change twice: {kinds}"
        assert set(kinds) <= allowed, kinds


def unreleased(changelog: str) -> str:
    return changelog.split("\n## [Unreleased]\n", 1)[1].split("\n## [", 1)[0]


def test_the_changelog_maps_each_retired_check_id_to_the_ids_it_became(changelog: str) -> None:
    table = unreleased(changelog).split("\n### Retired check ids\n", 1)[1].split("\n### ", 1)[0]
    mapped: dict[str, set[str]] = {}
    for row in table.splitlines():
        cells = row.split("|")
        if len(cells) < 5 or not re.fullmatch(r" `E\d{3}` ", cells[1]):
            continue
        now = cells[3]
        became = set(re.findall(r"`([EW]\d{3})`", now))
        for first, last in re.findall(r"`(E\d{3})`\u2013`(E\d{3})`", now):  # ranges
            became |= {code for code in PROBLEMS if first <= code <= last}
        mapped[cells[1].strip(" `")] = became
    assert mapped == {old: set(new) for old, new in RETIRED_IDS.items()}


def test_the_breaking_changes_name_every_retired_or_moved_setting(changelog: str) -> None:
    section = unreleased(changelog).split("\n### Breaking changes\n", 1)[1].split("\n### ", 1)[0]
    breaking = " ".join(section.split())  # as rendered: line breaks are spaces
    assert all(f"`{old}`" in breaking for old in RETIRED_IDS)
    for key in RETIRED:
        assert f"`{key}`" in breaking, key
    for old, (section, key) in MOVED.items():
        written = old[0] if len(old) == 1 else f'{old[0]}["{old[1]}"]'
        assert f'`{written}` is `{section}["{key}"]`' in breaking, old
