"""README's "Install into your project", run as printed: the checkout is
cloned and pip-installed into a fresh virtualenv, ``startproject`` makes a
project, the settings.py block is appended to its settings.py and the
urls.py block to its urls.py (two blocks, read from README.md itself, so
they cannot drift or be merged back into one), then the "Then" commands
migrate, make a reviewer and serve — and an expense claim waits for that
reviewer's approval in the admin, then completes.

Two substitutions, no more: the clone URL is a git copy of this working tree
(there is no network here, and the copy carries uncommitted edits), and the
served port is a free one instead of 8000. The model is a real local HTTP fake
(``OPENAI_BASE_URL``). Nothing of ``testproject`` is on the project's path.

Also the process helpers of the README's other runs (the Quick start test)."""

from __future__ import annotations

import http.cookiejar
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import RpcClient
from tests.docs.test_readme_blocks import INSTALL, ROOT, blocks
from tests.fakes import FakeLLM, Text, ToolCall
from tests.servers import Served, free_port, server_group
from tests.wheelhouse import offline

pytestmark = pytest.mark.slow

CLAIM = "File an expense of 80 for a hotel night in Lyon"
CLONE_URL = "https://github.com/toolnexus-django/toolnexus-django.git"
PRINTED_ADDRESS = "127.0.0.1:8000"

#: What a copy of the checkout leaves out: environments, caches, databases, builds.
NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv*", ".tox", "var", "__pycache__", "*.egg-info", ".*_cache", "_build"
)


def child_env(**extra: str) -> dict[str, str]:
    """This environment without what points at the demo project, a database
    or a model (so a child sees what a newcomer's shell has)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH", "DEMO_AGENT")
        and not k.startswith(("LLM_", "OPENAI_", "OPENROUTER_", "ANTHROPIC_", "TOOLNEXUS_"))
    }
    env.update({"PYTHONUNBUFFERED": "1", **extra})
    return env


def copy_checkout(dest: Path, *, git: bool = False) -> Path:
    """A copy of this working tree at ``dest`` (uncommitted edits included);
    with ``git``, also a repository of one commit, so it can be cloned."""
    shutil.copytree(ROOT, dest, ignore=NOT_COPIED)
    if git:
        who = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
        for args in (["init", "-q"], ["add", "-A"], [*who, "commit", "-qm", "copy"]):
            subprocess.run(["git", *args], check=True, cwd=dest, timeout=60, capture_output=True)
    return dest


def with_port(command: str, port: int) -> str:
    """``command`` with README's 127.0.0.1:8000 turned into 127.0.0.1:<port>."""
    assert PRINTED_ADDRESS in command, command
    return command.replace(PRINTED_ADDRESS, f"127.0.0.1:{port}")


def sh(script: str, cwd: Path, env: dict[str, str], timeout: float = 180) -> str:
    """Run a README block with bash, as a terminal would; its output, or the test fails."""
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{script!r} exited {done.returncode}:\n{out}"
    return done.stdout


def run(site: Path, *args: str, env: dict[str, str]) -> str:
    """``manage.py *args`` in a project with this Python; its output, or the test fails."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"manage.py {' '.join(args)} exited {done.returncode}:\n{out}"
    return out


@contextmanager
def served(site: Path, log: Path, env: dict[str, str]) -> Iterator[Served]:
    """``manage.py toolnexus_serve 127.0.0.1:<free port>`` in ``site`` with this Python."""
    port = free_port()
    argv = [sys.executable, "manage.py", "toolnexus_serve", f"127.0.0.1:{port}"]
    with server_group(argv, site, log, env, port) as server:
        yield server


class Browser:
    """A reviewer in the admin over real HTTP: cookies, CSRF tokens, forms."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=10) as resp:
            assert resp.status == 200, resp.status
            return str(resp.read().decode())

    def post(self, path: str, fields: dict[str, str]) -> str:
        page = self.get(path)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token, f"no CSRF token on {path}"
        data = urllib.parse.urlencode({"csrfmiddlewaretoken": token.group(1), **fields})
        with self.opener.open(self.base + path, data=data.encode(), timeout=10) as resp:
            assert resp.status == 200, resp.status  # after the redirect
            return str(resp.read().decode())


def install_blocks() -> tuple[str, str, str, str]:
    """README's Install: (the shell block that installs, the settings.py block,
    the urls.py block, the shell block that serves) — each found by what it
    says it is, so a settings.py and urls.py merged into one block fails here."""
    found = blocks(INSTALL)
    assert [b.lang for b in found] == ["sh", "python", "python", "sh"], found
    install, settings_part, urls_part, then = (b.text for b in found)
    assert settings_part.startswith("# settings.py"), settings_part
    assert urls_part.startswith("# urls.py"), urls_part
    assert "urlpatterns" not in settings_part, "settings.py's block must not touch urlpatterns"
    assert "INSTALLED_APPS" not in urls_part, "urls.py's block must not touch settings"
    assert CLONE_URL in install and "startproject" in install, install
    assert "toolnexus_serve" in then, then
    return install, settings_part, urls_part, then


def test_the_readme_install_pastes_into_a_fresh_startproject(
    tmp_path: Path, wheelhouse: Path
) -> None:
    install, settings_part, urls_part, then = install_blocks()
    # Named like the URL's last segment: the clone gets the directory name README uses.
    origin = copy_checkout(tmp_path / "upstream" / "toolnexus-django.git", git=True)
    # A newcomer's virtualenv, active (its bin/ first on PATH); pip's packages
    # from the run's wheelhouse (tests/wheelhouse.py) rather than the index.
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = child_env(
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        VIRTUAL_ENV=str(venv),
        **offline(wheelhouse),
    )
    site = tmp_path / "site"
    site.mkdir()
    sh(install.replace(CLONE_URL, str(origin)), site, env, timeout=300)
    assert (site / "toolnexus-django" / "pyproject.toml").is_file()
    for name, part in (("settings.py", settings_part), ("urls.py", urls_part)):
        with (site / "mysite" / name).open("a") as f:
            f.write("\n" + part)

    # No key anywhere yet: a warning (W004), not an error, so migrate runs.
    python = str(venv / "bin" / "python")
    checked = subprocess.run(
        [python, "manage.py", "check"],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "toolnexus_django.W004" in checked.stdout + checked.stderr

    with FakeLLM(style="openai") as fake:
        fake.push(
            ToolCall("file_expense", {"amount": 80, "description": "hotel night in Lyon"}),
            Text("Your claim is filed."),
        )
        port = free_port()
        script = with_port(then, port)
        argv = ["bash", "-e", "-c", script]
        with server_group(
            argv, site, tmp_path / "serve.log", {**env, "OPENAI_BASE_URL": fake.url}, port
        ) as server:
            card = server.wait_ready(timeout=120)  # after migrate and createsuperuser
            assert card["name"] == "filing-desk"
            assert card["url"] == f"{server.base}/agent/"
            rpc = RpcClient(card["url"])
            submitted = rpc.send(CLAIM)
            waiting = rpc.wait(submitted["id"])
            assert waiting["status"]["state"] == "input-required", waiting

            # The reviewer createsuperuser made approves it in the admin.
            reviewer = Browser(server.base)
            reviewer.post(
                "/admin/login/?next=/admin/",
                {"username": "rita", "password": "rita-pw", "next": "/admin/"},
            )
            assert "Awaiting a human" in reviewer.get("/admin/")
            review = f"/admin/toolnexus_django/awaitinghumantask/{submitted['id']}/review/"
            page = reviewer.get(review)
            assert "Approve an expense claim of 80.00" in page
            request_id = re.search(r'name="request_id" value="([^"]+)"', page)
            assert request_id, "the review page offers no answer form"
            reviewer.post(review, {"_answer": "approve", "request_id": request_id.group(1)})

            done = rpc.wait(submitted["id"], states=("completed", "failed", "canceled"))
            assert done["status"]["state"] == "completed", done
            assert done["artifacts"][0]["parts"] == [
                {"kind": "text", "text": "Your claim is filed."}
            ]
            # The tool ran once the claim was approved, and the model saw its result,
            # asked with the key the printed `export` set.
            assert len(fake.requests) == 2
            assert "Filed expense claim EXP-" in str(fake.requests[-1].body["messages"][-1])
            assert fake.requests[-1].headers.get("authorization") == "Bearer sk-..."
