"""Each store plugged into toolnexus's own ``Toolkit.serve`` serves a Task to
completion (DESIGN §3, last bullet): a plain toolnexus A2A server, the fake LLM
over real HTTP, and our store behind ``as_toolnexus_store``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import toolnexus
from asgiref.sync import sync_to_async
from django.db import connections
from toolnexus import sanitize

from tests.conftest import RpcClient, http
from tests.fakes import FakeLLM, Text
from toolnexus_django.models import TaskRecord
from toolnexus_django.stores import (
    DjangoTaskStore,
    FileTaskStore,
    InMemoryTaskStore,
    TaskStore,
    ToolnexusStoreAdapter,
    as_toolnexus_store,
)

SKILLS_DIR = Path(__file__).resolve().parents[2] / "testproject" / "skills"


async def serve_one_task(adapter: ToolnexusStoreAdapter, fake: FakeLLM, text: str) -> dict:
    """Serve the toolkit with ``adapter`` as its store, send ``text``, poll to
    the end over real HTTP. The HTTP client runs in a worker thread so the
    toolkit's loop stays free: toolnexus's server threads bridge every store
    call back onto it."""
    toolkit = await toolnexus.create_toolkit(builtins=False, skills_dir=str(SKILLS_DIR))
    try:
        client = toolnexus.create_client(
            base_url=fake.url, style="openai", model="m", api_key="k", retries=0
        )
        handle = await toolkit.serve(
            "127.0.0.1:0", client=client, a2a={"name": "filing-desk", "store": adapter}
        )
        try:
            card = await asyncio.to_thread(
                http, f"{handle.url}/.well-known/agent-card.json", timeout=10
            )
            assert card.status == 200 and card.json["name"] == "filing-desk"
            rpc = RpcClient(f"{handle.url}/")
            submitted = await asyncio.to_thread(rpc.send, text)
            assert submitted["status"]["state"] == "submitted"
            final = await asyncio.to_thread(rpc.wait, submitted["id"], ("completed", "failed"))
        finally:
            await handle.stop()
    finally:
        await toolkit.close()
        # DjangoTaskStore's async twins use asgiref's executor thread: close its
        # connections so the test database can be flushed and dropped.
        await sync_to_async(connections.close_all)()
    return final


def check_served(store: TaskStore, fake: FakeLLM) -> dict[str, Any]:
    fake.push(Text("filed"))
    adapter = as_toolnexus_store(store)
    assert isinstance(adapter, toolnexus.TaskStore)
    assert adapter.store is store

    final = asyncio.run(serve_one_task(adapter, fake, "file the taxi receipt"))

    assert final["status"]["state"] == "completed", final
    assert final["artifacts"][0]["parts"] == [{"kind": "text", "text": "filed"}]
    # The model really was asked, over HTTP, with our text.
    assert any("file the taxi receipt" in r.first_user_text for r in fake.requests)
    # The Task lives in OUR store, as toolnexus last saved it.
    stored = store.get(final["id"])
    assert stored is not None
    assert stored["status"]["state"] == "completed"
    assert stored["artifacts"] == final["artifacts"]
    return stored


@pytest.mark.slow
def test_memory_store_behind_toolnexus_serve(fake_llm: FakeLLM) -> None:
    store = InMemoryTaskStore()
    stored = check_served(store, fake_llm)
    assert len(store) == 1
    assert stored["id"]


@pytest.mark.slow
def test_file_store_behind_toolnexus_serve(fake_llm: FakeLLM, tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    stored = check_served(store, fake_llm)
    # One JSON file per Task, at the seed's path, readable outside the store.
    path = tmp_path / f"{sanitize(stored['id'])}.json"
    assert [p.name for p in tmp_path.glob("*.json")] == [path.name]
    assert json.loads(path.read_text("utf-8"))["status"]["state"] == "completed"
    # A fresh instance over the same directory sees it too.
    fresh = FileTaskStore(tmp_path).get(stored["id"])
    assert fresh is not None and fresh["status"]["state"] == "completed"


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_django_store_behind_toolnexus_serve(fake_llm: FakeLLM) -> None:
    store = DjangoTaskStore()
    stored = check_served(store, fake_llm)
    row = TaskRecord.objects.get(pk=stored["id"])
    assert row.state == "completed"
    assert row.task["artifacts"][0]["parts"] == [{"kind": "text", "text": "filed"}]
    assert TaskRecord.objects.count() == 1


def test_as_toolnexus_store_accepts_store_selectors(tmp_path: Path) -> None:
    """``as_toolnexus_store`` takes anything resolve_store accepts."""
    assert isinstance(as_toolnexus_store("memory").store, InMemoryTaskStore)
    file_adapter = as_toolnexus_store(f"file:{tmp_path}")
    assert isinstance(file_adapter.store, FileTaskStore)
    assert isinstance(as_toolnexus_store("django").store, DjangoTaskStore)

    async def round_trip() -> Any:
        await file_adapter.save({"id": "t1", "status": {"state": "working"}})
        return await file_adapter.get("t1"), await file_adapter.get("nope")

    back, unknown = asyncio.run(round_trip())
    assert back == {"id": "t1", "status": {"state": "working"}}
    assert unknown is None
    assert (tmp_path / "t1.json").is_file()
