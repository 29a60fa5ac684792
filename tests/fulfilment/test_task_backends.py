"""Fulfilment runs on whichever Django Tasks backend TASK_BACKEND names."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RpcClient
from tests.fakes import FakeLLM, Text
from toolnexus_django.compat import TASKS_MODULE, task_enqueued

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def test_another_backend_takes_over_without_code_changes(
    rpc: RpcClient, configure: Any, fake_llm: FakeLLM, settings: Any
) -> None:
    settings.TASKS = {
        "default": {"BACKEND": "toolnexus_django.backends.InProcessBackend"},
        "inline": {"BACKEND": f"{TASKS_MODULE}.backends.immediate.ImmediateBackend"},
    }
    configure(fake_llm, TASK_BACKEND="inline")
    fake_llm.default = Text("ran inline")
    seen: list[str] = []

    def on_enqueued(sender: Any, task_result: Any, **kwargs: Any) -> None:
        seen.append(task_result.backend)

    task_enqueued.connect(on_enqueued)
    try:
        task = rpc.send("hello")
    finally:
        task_enqueued.disconnect(on_enqueued)
    # The immediate backend ran the job inside the request: no polling needed.
    assert seen == ["inline"]
    assert rpc.get(task["id"])["result"]["status"]["state"] == "completed"


@pytest.mark.slow
def test_a_project_without_a_default_tasks_backend_still_serves(tmp_path: Path) -> None:
    (tmp_path / "settings_without_default.py").write_text(
        textwrap.dedent(
            """
            from testproject.settings import *  # noqa: F403
            TASKS = {"other": {"BACKEND": "toolnexus_django.backends.InProcessBackend"}}
            TOOLNEXUS = {**TOOLNEXUS, "STORE": "memory"}  # noqa: F405
            """
        )
    )
    script = textwrap.dedent(
        """
        import json, time, django
        django.setup()
        from django.test import Client
        client = Client()
        def rpc(method, params):
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            return client.post("/agent/", json.dumps(body), content_type="application/json").json()
        message = {"role": "user", "parts": [{"kind": "text", "text": "a b c"}]}
        sent = rpc("SendMessage", {"message": message})
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            state = rpc("GetTask", {"id": sent["result"]["id"]})["result"]["status"]["state"]
            if state == "completed":
                print("completed")
                break
            time.sleep(0.02)
        """
    )
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}",
        "DJANGO_SETTINGS_MODULE": "settings_without_default",
        "TOOLNEXUS_LOG_LEVEL": "WARNING",
    }
    env.pop("LLM_BASE_URL", None)  # the offline demo model
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "completed"


def test_the_tasks_api_comes_from_django_itself_on_django_6() -> None:
    import django

    from toolnexus_django import compat

    expected = "django.tasks" if django.VERSION >= (6, 0) else "django_tasks"
    assert compat.TASKS_MODULE == expected
    assert compat.BaseTaskBackend.__module__.startswith(expected)
