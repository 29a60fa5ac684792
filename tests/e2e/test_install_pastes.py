"""The README's Install pastes: appended to a fresh ``startproject``'s
settings.py and urls.py (read from README.md itself, so the two cannot
drift), it checks, migrates, serves, and an expense claim waits for a
reviewer's approval in the admin and then completes.

The project is generated in a temporary directory and runs on its own SQLite
database with the venv's Python (where the app is pip-installed), outside
this checkout: nothing of ``testproject`` is on its path."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text, ToolCall
from tests.servers import Served, free_port

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
CLAIM = "File an expense of 80 for a hotel night in Lyon"


def install_snippet() -> tuple[str, str]:
    """The python block under README's "## Install", split at its ``# urls.py``
    line: (what settings.py gets, what urls.py gets)."""
    text = README.read_text()
    section = text.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert match, "README's Install has no python block"
    settings_part, marker, urls_part = match.group(1).partition("\n# urls.py")
    assert marker, "README's Install python block has no '# urls.py' line"
    return settings_part, marker.lstrip("\n") + urls_part


def child_env(**extra: str) -> dict[str, str]:
    """This environment without what points at the demo project or a model."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH")
        and not k.startswith(("LLM_", "OPENAI_", "OPENROUTER_", "ANTHROPIC_", "TOOLNEXUS_"))
    }
    env.update({"PYTHONUNBUFFERED": "1", **extra})
    return env


def run(site: Path, *args: str, env: dict[str, str]) -> str:
    """``manage.py *args`` in the generated project; its output, or the test fails."""
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
    """``manage.py toolnexus_serve 127.0.0.1:<free port>`` as the README runs
    it; stopped (its whole process group) whatever happens."""
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "toolnexus_serve", f"127.0.0.1:{port}"],
            cwd=site,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: killpg reaches the workers
        )
    server = Served(proc, log, f"http://127.0.0.1:{port}")
    try:
        yield server
    except BaseException:
        print(f"--- toolnexus_serve output ({log}) ---\n{server.output()}")
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        try:  # workers left behind by a master that died
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


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


def test_the_readme_install_pastes_into_a_fresh_startproject(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    subprocess.run(
        [sys.executable, "-m", "django", "startproject", "mysite", str(site)],
        check=True,
        env=child_env(),
        timeout=60,
    )
    settings_part, urls_part = install_snippet()
    for name, part in (("settings.py", settings_part), ("urls.py", urls_part)):
        with (site / "mysite" / name).open("a") as f:
            f.write("\n" + part)

    # No key anywhere yet: a warning (W004), not an error, so migrate runs.
    out = run(site, "check", env=child_env())
    assert "toolnexus_django.W004" in out, out

    with FakeLLM(style="openai") as fake:
        fake.push(
            ToolCall("file_expense", {"amount": 80, "description": "hotel night in Lyon"}),
            Text("Your claim is filed."),
        )
        env = child_env(
            OPENAI_BASE_URL=fake.url,
            OPENAI_API_KEY="test-key",
            DJANGO_SUPERUSER_USERNAME="rita",
            DJANGO_SUPERUSER_PASSWORD="rita-pw",
            DJANGO_SUPERUSER_EMAIL="rita@example.invalid",
        )
        assert "System check identified no issues" in run(site, "check", env=env)
        run(site, "migrate", env=env)
        run(site, "createsuperuser", "--noinput", env=env)

        with served(site, tmp_path / "serve.log", env) as server:
            card = server.wait_ready()
            assert card["name"] == "filing-desk"
            assert card["url"] == f"{server.base}/agent/"
            rpc = RpcClient(card["url"])
            submitted = rpc.send(CLAIM)
            waiting = rpc.wait(submitted["id"])
            assert waiting["status"]["state"] == "input-required", waiting

            # The reviewer approves it in the admin, as the README's walk-through does.
            reviewer = Browser(server.base)
            reviewer.post(
                "/admin/login/?next=/admin/",
                {"username": "rita", "password": "rita-pw", "next": "/admin/"},
            )
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
            # The tool ran once the claim was approved, and the model saw its result.
            assert len(fake.requests) == 2
            assert "Filed expense claim EXP-" in str(fake.requests[-1].body["messages"][-1])
            assert fake.requests[-1].headers.get("authorization") == "Bearer test-key"
