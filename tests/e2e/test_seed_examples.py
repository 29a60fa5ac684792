"""The seed page's three examples, in Python."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from toolnexus import sanitize

from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Text
from toolnexus_django.stores import (
    FileTaskStore,
    InMemoryTaskStore,
    TaskStore,
    resolve_store,
)


def test_file_store_save_get_and_unknown(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    store.save({"id": "t1", "status": {"state": "working"}})
    back = store.get("t1")
    assert back is not None, "expected the task back"
    assert back["status"]["state"] == "working"
    assert store.get("nope") is None


def test_resolve_store_selects_memory_file_or_custom(tmp_path: Path) -> None:
    assert isinstance(resolve_store(None), InMemoryTaskStore)
    assert isinstance(resolve_store("memory"), InMemoryTaskStore)
    file_store = resolve_store(f"file:{tmp_path}")
    assert isinstance(file_store, FileTaskStore)
    assert file_store.dir == tmp_path

    saves = 0
    backing: dict[str, dict[str, Any]] = {}

    class Custom(TaskStore):
        def get(self, id: str) -> dict[str, Any] | None:
            return backing.get(id)

        def save(self, task: dict[str, Any]) -> None:
            nonlocal saves
            saves += 1
            backing[str(task["id"])] = task

    custom = Custom()
    resolved = resolve_store(custom)
    assert resolved is custom, "custom store used as-is"
    resolved.save({"id": "t9", "status": {"state": "submitted"}})
    assert saves == 1
    assert backing["t9"]["status"]["state"] == "submitted"


@pytest.mark.django_db(transaction=True)
def test_served_endpoint_persists_task_on_disk(
    tmp_path: Path, fake_llm: FakeLLM, configure: Any, rpc: RpcClient
) -> None:
    fake_llm.push(Text("filed"))
    configure(fake_llm, store=f"file:{tmp_path}")

    submitted = rpc.send("go")
    task_id = submitted["id"]
    assert task_id and submitted["status"]["state"] == "submitted"

    file = tmp_path / f"{sanitize(task_id)}.json"

    def on_disk_state() -> str:
        if not file.exists():
            return ""
        return json.loads(file.read_text())["status"]["state"]

    wait_until(lambda: on_disk_state() == "completed", timeout=10, what="the task on disk")
    on_disk = json.loads(file.read_text())
    assert on_disk["artifacts"][0]["parts"] == [{"kind": "text", "text": "filed"}]
