"""The install guide (README's "Install into your project", and
docs/howto/install.md, the same blocks) run as printed: the checkout is
cloned and pip-installed into a fresh virtualenv, ``startproject`` makes a
project, the settings.py block is appended to its settings.py and the
urls.py block to its urls.py (two blocks, read from the pages themselves, so
they cannot drift or be merged back into one), then the "Then" commands
migrate, make a reviewer and serve — and an expense claim waits for that
reviewer's approval in the admin, then completes.

Then, in the same project (no second virtualenv), the first day without an
API key: the install guide's offline-model line, and the Write tools page's
first tool (docs/howto/tools.md) — a ``tickets`` app of the project's own,
its model, its ``close_ticket`` tool, its settings and migrations, a
requester and a ticket — each block as printed; the requester's "close
ticket 1" waits for the reviewer, who approves it in the admin over real
HTTP, and the ticket is closed in the database as the requester; then the
page's test set-up and test file, as printed, pass with pytest.

Two substitutions, no more: the clone URL is a git copy of this working tree
(there is no network here, and the copy carries uncommitted edits), and the
served port is a free one instead of 8000. The hosted model is a real local
HTTP fake (``OPENAI_BASE_URL``). Nothing of ``testproject`` is on the
project's path.

Also the process helpers of the README's other runs (the Quick start test)."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from tests.admin_http import AdminSession
from tests.conftest import RpcClient, basic
from tests.docs.test_howto_blocks import (
    INSTALL_GUIDE,
    TOOLS_GUIDE,
    first_tool_blocks,
    install_guide_blocks,
    offline_settings,
    tool_test_blocks,
)
from tests.docs.test_readme_blocks import ROOT
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
    """This environment without what points at the demo project, a database,
    a model or this pytest run's options (so a child sees what a newcomer's
    shell has)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH", "DEMO_AGENT")
        and not k.startswith(
            ("LLM_", "OPENAI_", "OPENROUTER_", "ANTHROPIC_", "TOOLNEXUS_", "PYTEST_")
        )
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
    """The install guide's blocks, README's Install's too: (the shell block
    that installs, the settings.py block, the urls.py block, the shell block
    that serves) — each found by what it says it is, so a settings.py and
    urls.py merged into one block fails here."""
    install, settings_part, urls_part, then = install_guide_blocks()
    assert settings_part.startswith("# settings.py"), settings_part
    assert urls_part.startswith("# urls.py"), urls_part
    assert "urlpatterns" not in settings_part, "settings.py's block must not touch urlpatterns"
    assert "INSTALLED_APPS" not in urls_part, "urls.py's block must not touch settings"
    assert CLONE_URL in install and "startproject" in install, install
    assert "toolnexus_serve" in then, then
    return install, settings_part, urls_part, then


@pytest.mark.budget(
    seconds=120,
    reason="one fresh project walked twice (a hosted model, then the offline one with a tool "
    "of its own and its tests): a second venv would cost more; 46 s in CI, 65 s beside a CI run",
)
def test_the_install_guide_pastes_into_a_fresh_startproject_and_takes_a_tool_of_its_own(
    tmp_path: Path, wheelhouse: Path
) -> None:
    site, env, then = newcomers_project(tmp_path, wheelhouse)
    tests = tool_test_blocks()
    # The tools page's pip install, as printed, goes on while the guide's server runs.
    with in_background(tests["install"], site, env, tmp_path / "pip.log") as pip_done:
        an_expense_claim_is_approved(site, env, then, tmp_path / "serve.log")
        # The first day without an API key, in the same project and virtualenv.
        make_a_tool_of_its_own(site, env)
        pip_done()
    for name in ("pytest.ini", "conftest.py", "tickets/test_tools.py"):
        paste(site, name, tests[name])
    # The tools page's tests run while the project serves its tool (their database is
    # another: pytest-django's own).
    with in_background(tests["run"], site, env, tmp_path / "pytest.log") as pytest_done:
        serve = then.strip().splitlines()[-1]
        a_ticket_is_closed_once_approved(site, env, serve, tmp_path / "serve-offline.log")
        ran = pytest_done()
    assert re.search(r"\b2 passed\b", ran), ran


def newcomers_project(tmp_path: Path, wheelhouse: Path) -> tuple[Path, dict[str, str], str]:
    """The install guide's install, settings.py and urls.py, as printed, in a
    fresh virtualenv and ``startproject``: (the project, its shell's
    environment, the guide's block that migrates, makes a reviewer and serves)."""
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
    paste(site, "settings.py (append)", settings_part)
    paste(site, "urls.py (append)", urls_part)

    # No key anywhere yet: a warning (W004), not an error, so migrate runs.
    checked = subprocess.run(
        [str(venv / "bin" / "python"), "manage.py", "check"],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "toolnexus_django.W004" in checked.stdout + checked.stderr
    return site, env, then


def paste(site: Path, name: str, text: str) -> None:
    """A file block of the guides into the project: ``settings.py (append)``
    appends to mysite/settings.py; a path without "(append)" is written whole."""
    path, _, how = name.partition(" ")
    target = site / "mysite" / path if path in ("settings.py", "urls.py") else site / path
    if how == "(append)":
        with target.open("a") as f:
            f.write("\n" + text)
    else:
        target.write_text(text)


def an_expense_claim_is_approved(site: Path, env: dict[str, str], then: str, log: Path) -> None:
    """The guide's "Then", as printed, on a hosted model (the fake): migrate,
    the reviewer, serve; a claim waits for rita, she approves it in the admin."""
    with FakeLLM(style="openai") as fake:
        fake.push(
            ToolCall("file_expense", {"amount": 80, "description": "hotel night in Lyon"}),
            Text("Your claim is filed."),
        )
        port = free_port()
        argv = ["bash", "-e", "-c", with_port(then, port)]
        with server_group(argv, site, log, {**env, "OPENAI_BASE_URL": fake.url}, port) as server:
            card = server.wait_ready(timeout=120)  # after migrate and createsuperuser
            assert card["name"] == "filing-desk"
            assert card["url"] == f"{server.base}/agent/"
            rpc = RpcClient(card["url"])
            submitted = rpc.send(CLAIM)
            waiting = rpc.wait(submitted["id"])
            assert waiting["status"]["state"] == "input-required", waiting

            # The reviewer createsuperuser made approves it in the admin.
            reviewer = AdminSession(server.base).login("rita", "rita-pw")
            assert "Awaiting a human" in reviewer.get("/admin/").text
            page = approve(reviewer, submitted["id"])
            assert "Approve an expense claim of 80.00" in page

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


def approve(reviewer: AdminSession, task_id: str) -> str:
    """``reviewer`` presses Approve on the Task's review page; the page, as it was."""
    review = f"/admin/toolnexus_django/awaitinghumantask/{task_id}/review/"
    page = reviewer.get(review)
    assert page.status == 200, page
    request_id = re.search(r'name="request_id" value="([^"]+)"', page.text)
    assert request_id, "the review page offers no answer form"
    answered = reviewer.post(review, {"_answer": "approve", "request_id": request_id.group(1)})
    assert answered.status == 200, answered.text
    return page.text


def make_a_tool_of_its_own(site: Path, env: dict[str, str]) -> None:
    """The install guide's offline line, and the tools page's first tool, its
    migrations, a requester and a ticket: each block as printed."""
    tool = first_tool_blocks()
    paste(site, "settings.py (append)", offline_settings())
    sh(tool["startapp"], site, env)
    for name in ("tickets/models.py", "tickets/tools.py", "settings.py (append)"):
        paste(site, name, tool[name])
    sh(tool["migrate"], site, env)
    sh(tool["people"], site, env)
    assert ticket(site) == (None, "")


def a_ticket_is_closed_once_approved(
    site: Path, env: dict[str, str], serve: str, log: Path
) -> None:
    """Served with the install guide's serve line, on the offline model:
    alice's "close ticket 1" (the tools page's curl, as printed) waits for
    rita, who approves it in the admin; the ticket is closed as alice."""
    tool = first_tool_blocks()
    guide = prose(TOOLS_GUIDE)
    port = free_port()
    with server_group(["bash", "-e", "-c", with_port(serve, port)], site, log, env, port) as server:
        server.wait_ready(timeout=60)
        anonymous = RpcClient(f"{server.base}/agent/")
        the_offline_model_answers_as_the_guide_says(anonymous)
        # Not offered to a caller without tickets.change_ticket, and the model says so.
        refused = anonymous.wait(anonymous.send("close_ticket 1")["id"])
        assert refused["artifacts"][0]["parts"][0]["text"].startswith(
            "I cannot call close_ticket: this run does not offer it"
        ), refused
        assert "asked for `close_ticket 1`, the offline model answers that this run" in guide
        sent = json.loads(sh(with_port(tool["ask"], port), site, env))
        task_id = sent["result"]["id"]
        alice = RpcClient(f"{server.base}/agent/", headers=basic("alice"))
        waiting = alice.wait(task_id)
        assert waiting["status"]["state"] == "input-required", waiting
        asks = waiting["status"]["message"]["parts"][0]["text"]
        assert asks == "Close ticket 1?" and f'asking "{asks}"' in guide
        assert ticket(site) == (None, ""), "closed before a reviewer said yes"

        approve(AdminSession(server.base).login("rita", "rita-pw"), task_id)
        done = alice.wait(task_id, states=("completed", "failed", "canceled"))
        assert done["status"]["state"] == "completed", done
        answer = done["artifacts"][0]["parts"][0]["text"]
        assert answer == "Done. Closed ticket 1: The printer is on fire."
        assert f'completes with "{answer}"' in guide
    assert ticket(site) == ("alice", "rita")


def the_offline_model_answers_as_the_guide_says(anonymous: RpcClient) -> None:
    """The install guide's examples of the offline model, each answered as it says."""
    guide = prose(INSTALL_GUIDE)
    claim = 'file expense 80 "a hotel night"'
    asks = "Approve an expense claim of 80.00 for 'a hotel night'?"
    plain, echoed = "What can you do?", "Summary (4 words): What can you do?"
    for quoted in (f"`{claim}` waits for a reviewer", asks, f'"{plain}" is answered "{echoed}"'):
        assert quoted in guide, quoted
    waiting = anonymous.wait(anonymous.send(claim)["id"])
    assert waiting["status"]["state"] == "input-required", waiting
    assert waiting["status"]["message"]["parts"][0]["text"] == asks
    done = anonymous.wait(anonymous.send(plain)["id"])
    assert done["status"]["state"] == "completed", done
    assert done["artifacts"][0]["parts"][0]["text"] == echoed


def prose(page: Path) -> str:
    """A page's text with its line breaks as spaces (a quote may wrap)."""
    return " ".join(page.read_text().split())


def ticket(site: Path, pk: int = 1) -> tuple[str | None, str]:
    """(who closed ticket ``pk``, who approved it), from the project's own database."""
    with closing(sqlite3.connect(site / "db.sqlite3")) as db:
        row = db.execute(
            "SELECT u.username, t.approved_by FROM tickets_ticket t"
            " LEFT JOIN auth_user u ON u.id = t.closed_by_id WHERE t.id = ?",
            (pk,),
        ).fetchone()
    assert row is not None, f"no ticket {pk}"
    return row[0], row[1]


@contextmanager
def in_background(
    script: str, cwd: Path, env: dict[str, str], log: Path, timeout: float = 300
) -> Iterator[Callable[[], str]]:
    """A block run with bash, as :func:`sh` runs it, while the test goes on;
    the callable waits for it: its output, or the test fails. Stopped,
    whatever happens."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["bash", "-e", "-c", script],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: killpg reaches its children
        )

    def done() -> str:
        code = proc.wait(timeout)
        output = log.read_text()
        assert code == 0, f"{script!r} exited {code}:\n{output}"
        return output

    try:
        yield done
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
