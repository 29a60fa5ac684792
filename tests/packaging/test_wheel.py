"""The built package as a user gets it from a package index.

The wheel is installed into a fresh venv (its dependencies from the run's
wheelhouse, tests/wheelhouse.py, as they would come from pip's index),
and from a directory outside this checkout, with nothing of the checkout on
the path: ``django-admin startproject``, the app in ``INSTALLED_APPS``,
``manage.py check``, and the seed's three examples against the installed app
— the file store saves and reads back a Task, ``resolve_store`` picks memory,
file or a custom store, and a served endpoint (``manage.py toolnexus_serve``,
over real HTTP) keeps its Task on disk. The wheel and the sdist carry what
they should, and the sdist no tests.

CI (``.ci/run``) builds the wheel and the sdist once, checks them with
``twine check --strict`` and names them in ``TOOLNEXUS_WHEEL`` and
``TOOLNEXUS_SDIST``; without those this session builds them (``python -m
build``, once)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from toolnexus import sanitize

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Text
from tests.servers import Served, free_port, server_group
from tests.wheelhouse import offline

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "toolnexus_django"


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path


@dataclass(frozen=True)
class Site:
    """A ``startproject`` site using the app from a fresh venv."""

    venv: Path
    dir: Path
    tasks_dir: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without what points at the checkout, its demo project
    or a model: a user's shell, as far as the app can tell."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH", "VIRTUAL_ENV")
        and not k.startswith(("LLM_", "OPENAI_", "OPENROUTER_", "ANTHROPIC_", "TOOLNEXUS_"))
    }
    env.update({"PYTHONUNBUFFERED": "1", **extra})
    return env


def run(args: Sequence[str | Path], *, cwd: Path, env: dict[str, str], timeout: int = 300) -> str:
    """Run a command to completion; its output, or the test fails with it."""
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(map(str, args))} exited {done.returncode}:\n{out}"
    return out


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The wheel and sdist CI built, or ones built here from this checkout."""
    wheel, sdist = os.environ.get("TOOLNEXUS_WHEEL"), os.environ.get("TOOLNEXUS_SDIST")
    if wheel and sdist:
        return Dist(Path(wheel), Path(sdist))
    out = tmp_path_factory.mktemp("dist")
    python = sys.executable
    if importlib.util.find_spec("build") is None:  # the test extra has no `build`
        tools = tmp_path_factory.mktemp("build-tools") / "venv"
        run([sys.executable, "-m", "venv", tools], cwd=out, env=clean_env())
        run([tools / "bin" / "pip", "install", "-q", "build"], cwd=out, env=clean_env())
        python = str(tools / "bin" / "python")
    run([python, "-m", "build", "--outdir", out, ROOT], cwd=out, env=clean_env())
    (built_wheel,) = out.glob("*.whl")
    (built_sdist,) = out.glob("*.tar.gz")
    return Dist(built_wheel, built_sdist)


SETTINGS = """
import os

INSTALLED_APPS += ["rest_framework", "toolnexus_django"]

TOOLNEXUS = {{
    "STORE": "file:{tasks_dir}",
    "CLIENT": {{
        "base_url": os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        "style": "openai",
        "model": "gpt-4o-mini",
        "api_key": os.environ.get("OPENAI_API_KEY", ""),
    }},
}}
"""

URLS = """
from django.urls import include, path

urlpatterns += [path("agent/", include("toolnexus_django.urls"))]
"""


@pytest.fixture(scope="module")
def site(dist: Dist, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """A fresh venv holding the wheel, and a new project using the app."""
    home = tmp_path_factory.mktemp("fresh")
    venv = home / "venv"
    run([sys.executable, "-m", "venv", venv], cwd=home, env=clean_env())
    # Dependencies from the run's wheelhouse (tests/wheelhouse.py); the app from the wheel only.
    run(
        [venv / "bin" / "pip", "install", "-q", dist.wheel],
        cwd=home,
        env=clean_env(**offline(wheelhouse)),
    )
    project = home / "site"
    project.mkdir()
    run(
        [venv / "bin" / "django-admin", "startproject", "mysite", project],
        cwd=home,
        env=clean_env(),
    )
    tasks_dir = home / "tasks"
    with (project / "mysite" / "settings.py").open("a") as f:
        f.write(SETTINGS.format(tasks_dir=tasks_dir))
    with (project / "mysite" / "urls.py").open("a") as f:
        f.write(URLS)
    return Site(venv, project, tasks_dir)


def package_files_in_checkout() -> set[str]:
    """The package's files as committed (every file on disk, outside a git checkout)."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", PACKAGE], capture_output=True, check=False
    )
    if listed.returncode == 0 and listed.stdout:
        return {name for name in listed.stdout.decode().split("\0") if name}
    return {
        str(p.relative_to(ROOT))
        for p in (ROOT / PACKAGE).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_the_wheel_carries_every_file_of_the_package(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as whl:
        names = set(whl.namelist())
    in_wheel = {n for n in names if n.startswith(f"{PACKAGE}/")}
    # Modules, migrations, the admin's templates and static files, py.typed.
    assert package_files_in_checkout() - in_wheel == set()
    assert f"{PACKAGE}/py.typed" in in_wheel
    assert any(n.startswith(f"{PACKAGE}/templates/admin/") for n in in_wheel)
    assert f"{PACKAGE}/migrations/0001_initial.py" in in_wheel
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_the_sdist_carries_the_package_and_its_description_and_no_tests(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as tar:
        names = [m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()]
    top = {n.split("/", 1)[0] for n in names}
    # setup.cfg: setuptools may write one (the egg_info tag); it configures nothing.
    assert top - {"setup.cfg"} == {
        "PKG-INFO",
        "pyproject.toml",
        "MANIFEST.in",
        "LICENSE",
        "README.md",
        "CHANGELOG.md",
        PACKAGE,
        f"{PACKAGE}.egg-info",
    }
    assert package_files_in_checkout() <= set(names)


def venv_python(site: Site, code: str, **env: str) -> str:
    """Run ``code`` with the fresh venv's Python in the project's directory."""
    return run(
        [site.python, "-c", code],
        cwd=site.dir,
        env=clean_env(DJANGO_SETTINGS_MODULE="mysite.settings", **env),
    )


def test_the_app_is_imported_from_the_fresh_venv_not_the_checkout(site: Site) -> None:
    found = json.loads(
        venv_python(
            site,
            "import json, sys, sysconfig, toolnexus_django;"
            "print(json.dumps({'file': toolnexus_django.__file__, 'path': sys.path,"
            " 'purelib': sysconfig.get_path('purelib')}))",
        )
    )
    app = Path(found["file"]).resolve()
    assert app.is_relative_to(Path(found["purelib"]).resolve()), found
    assert Path(found["purelib"]).resolve().is_relative_to(site.venv.resolve()), found
    # "" is the script's directory, the project's (outside the checkout).
    on_path = [(site.dir / entry).resolve() for entry in found["path"]]
    assert [p for p in on_path if p.is_relative_to(ROOT)] == [], found["path"]


def test_manage_py_check_passes(site: Site) -> None:
    out = run(
        [site.python, "manage.py", "check"],
        cwd=site.dir,
        env=clean_env(OPENAI_API_KEY="test-key"),
    )
    assert "System check identified no issues (0 silenced)." in out, out


# The seed's first two examples, as a user's script run by the fresh venv.
STORE_EXAMPLES = """
import sys, tempfile
from pathlib import Path

import django

django.setup()

from toolnexus_django.stores import FileTaskStore, InMemoryTaskStore, TaskStore, resolve_store

# 1. The smallest useful call: save and read back directly.
tmp = Path(tempfile.mkdtemp(prefix="toolnexus-task-store"))
store = FileTaskStore(tmp)
store.save({"id": "t1", "status": {"state": "working"}})
back = store.get("t1")
assert back is not None, "expected the task back"
assert back["status"]["state"] == "working", back
assert store.get("nope") is None, "unknown id should be None"
print("ok 1:", back)

# 2. resolve_store selects memory, file, or a custom store.
assert isinstance(resolve_store(None), InMemoryTaskStore)
assert isinstance(resolve_store("memory"), InMemoryTaskStore)
file_store = resolve_store(f"file:{tmp}")
assert isinstance(file_store, FileTaskStore) and file_store.dir == tmp, file_store

class Custom(TaskStore):
    def __init__(self):
        self.backing, self.saves = {}, 0

    def get(self, id):
        return self.backing.get(id)

    def save(self, task):
        self.saves += 1
        self.backing[str(task["id"])] = task

custom = Custom()
resolved = resolve_store(custom)
assert resolved is custom, "custom store used as-is"
resolved.save({"id": "t9", "status": {"state": "submitted"}})
assert custom.saves == 1 and custom.backing["t9"]["status"]["state"] == "submitted"
print("ok 2: memory, file and custom")
"""


def test_the_seed_store_examples_run(site: Site) -> None:
    out = venv_python(site, STORE_EXAMPLES)
    assert "ok 1: {'id': 't1', 'status': {'state': 'working'}}" in out, out
    assert "ok 2: memory, file and custom" in out, out


@pytest.fixture
def serving(site: Site, fake_llm_env: dict[str, str], tmp_path: Path) -> Iterator[Served]:
    """``manage.py toolnexus_serve`` of the fresh venv on a free port; stopped
    (its whole process group) whatever happens."""
    run([site.python, "manage.py", "migrate"], cwd=site.dir, env=fake_llm_env)
    port = free_port()
    argv = [site.python, "manage.py", "toolnexus_serve", f"127.0.0.1:{port}", "--workers", "1"]
    with server_group(argv, site.dir, tmp_path / "serve.log", fake_llm_env, port) as server:
        yield server


@pytest.fixture
def fake_llm_env(fake_llm: FakeLLM) -> dict[str, str]:
    return clean_env(OPENAI_BASE_URL=fake_llm.url, OPENAI_API_KEY="test-key")


def test_a_served_endpoint_keeps_its_task_on_disk(
    site: Site, fake_llm: FakeLLM, serving: Served
) -> None:
    """The seed's third example: a Task sent to the served agent is written,
    through its moves, to the file store's directory."""
    fake_llm.push(Text("filed"))
    card = serving.wait_ready()
    rpc = RpcClient(card["url"])

    submitted = rpc.send("go")
    task_id = submitted["id"]
    assert task_id and submitted["status"]["state"] == "submitted"

    file = site.tasks_dir / f"{sanitize(task_id)}.json"

    def on_disk_state() -> str:
        if not file.exists():
            return ""
        return str(json.loads(file.read_text())["status"]["state"])

    wait_until(lambda: on_disk_state() == "completed", timeout=20, what="the task on disk")
    on_disk = json.loads(file.read_text())
    assert on_disk["artifacts"][0]["parts"] == [{"kind": "text", "text": "filed"}]
    assert len(fake_llm.requests) == 1
