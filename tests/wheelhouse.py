"""One wheelhouse per run for every fresh virtualenv the tests make.

The packaging test, the README's Quick start and the Install pastes each
install the app into a new venv with a real ``pip install``, as a user does.
Resolving and downloading its dependencies from the index each time cost most
of their minutes (and a network). Instead, each installs from one directory
of wheels (``PIP_FIND_LINKS`` with ``PIP_NO_INDEX``): the app's dependencies,
its ``demo`` extra's, what building the checkout needs (setuptools), and
pytest-django (the install guide's project runs the tools page's tests). It is
still pip resolving and installing into a fresh venv; only the index is local.

``TOOLNEXUS_WHEELHOUSE`` names one (``.ci/run`` builds it once per Python);
without it the first test that needs one builds it (``pip wheel``), once per
session, shared by xdist's workers under a lock. The app's own wheel is never
in it: each test installs the app from what it means to test.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: What building the checkout (an editable install, ``python -m build``) needs.
BUILD_REQUIREMENTS = ("setuptools>=77", "wheel")
#: What the Write tools page's tests install into the install guide's project.
TEST_REQUIREMENTS = ("pytest", "pytest-django")


def build(into: Path, python: str = sys.executable) -> Path:
    """Wheels of the app's dependencies (with the ``demo`` extra), of what
    building it needs, and of pytest and pytest-django, for ``python``, in ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    wheels = [f"{ROOT}[demo]", *BUILD_REQUIREMENTS, *TEST_REQUIREMENTS]
    subprocess.run(
        [python, "-m", "pip", "wheel", "-q", "--wheel-dir", str(into), *wheels],
        check=True,
        timeout=900,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    for own in into.glob("toolnexus_django-*.whl"):
        own.unlink()
    return into


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's wheelhouse (``TOOLNEXUS_WHEELHOUSE``, else built here once)."""
    named = os.environ.get("TOOLNEXUS_WHEELHOUSE")
    if named:
        return Path(named)
    # xdist's workers share their base temps' parent: the first builds, the rest wait.
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    house = shared / "wheelhouse"
    with (shared / "wheelhouse.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = house / ".built"
        if not done.exists():
            build(house)
            done.touch()
    return house


def offline(wheelhouse: Path) -> dict[str, str]:
    """The environment a ``pip install`` of a test takes its packages from:
    ``wheelhouse`` and nothing else."""
    return {"PIP_FIND_LINKS": str(wheelhouse), "PIP_NO_INDEX": "1"}
