"""The TaskStore contract (DESIGN §3), store by store, against real parts:
real files in a temp dir, the real test database (SQLite or PostgreSQL)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import toolnexus
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, connections
from toolnexus import sanitize

from tests import taskdicts
from toolnexus_django.models import TaskRecord
from toolnexus_django.stores import (
    PRIVATE_KEY,
    DjangoTaskStore,
    FileTaskStore,
    InMemoryTaskStore,
    TaskStore,
    get_task_store,
    resolve_store,
)
from toolnexus_django.stores.file import LOCK_NAME

REPO_ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- #
# Sample Tasks, built with the app's own shapes
# --------------------------------------------------------------------------- #

PENDING = toolnexus.Request(
    id="pnd-approve-42",
    kind="approval",
    prompt="Approve the €120 taxi claim?",
    url=None,
    data={"schema": {"type": "object", "properties": {"approve": {"type": "boolean"}}}},
    expiresAt="2030-01-01T00:00:00Z",
)

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "user", "content": "file my taxi receipt: €120 — 日本"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "file_expense", "arguments": '{"amount": 120}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Approve the €120 taxi claim?"},
]


def submitted_task(text: str = "file my taxi receipt", owner: str | None = None) -> dict[str, Any]:
    message = {"role": "user", "parts": [{"kind": "text", "text": text}]}
    return taskdicts.new_task(message, text=text, owner=owner)


def suspended_task(owner: str | None = None) -> dict[str, Any]:
    """A Task suspended on a pending Request, exactly as fulfilment stores it."""
    working = taskdicts.with_status(submitted_task(owner=owner), "working")
    return taskdicts.input_required(working, PENDING, transcript=TRANSCRIPT, style="openai")


def assert_pending_intact(task: dict[str, Any] | None) -> None:
    assert task is not None
    assert task["status"]["state"] == "input-required"
    section = task[PRIVATE_KEY]
    assert toolnexus.Request(**section["pending"]) == PENDING
    assert section["transcript"] == TRANSCRIPT
    assert section["style"] == "openai"


# --------------------------------------------------------------------------- #
# One parametrised fixture over the three stores
# --------------------------------------------------------------------------- #

STORE_KINDS = [
    "memory",
    "file",
    pytest.param("django", marks=pytest.mark.django_db),
]


def make_store(kind: str, tmp_path: Path) -> TaskStore:
    if kind == "memory":
        return InMemoryTaskStore()
    if kind == "file":
        return FileTaskStore(tmp_path / "tasks")
    return DjangoTaskStore()


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> TaskStore:
    return make_store(request.param, tmp_path)


def test_save_then_get_round_trips(store: TaskStore) -> None:
    task = submitted_task("hello — ünïcödé ✓")
    store.save(task)
    assert store.get(task["id"]) == task


def test_unknown_id_is_none(store: TaskStore) -> None:
    store.save(submitted_task())
    assert store.get("no-such-task") is None
    assert store.get("") is None


def test_save_replaces_the_whole_task(store: TaskStore) -> None:
    first = submitted_task()
    first["extra"] = {"only": "in the first version"}
    store.save(first)
    second = taskdicts.completed(taskdicts.with_status(first, "working"), "filed")
    del second["extra"]
    store.save(second)
    back = store.get(first["id"])
    assert back == second
    assert back is not None and "extra" not in back
    assert back["status"]["state"] == "completed"
    assert back["artifacts"][0]["parts"] == [{"kind": "text", "text": "filed"}]


def test_private_section_round_trips(store: TaskStore) -> None:
    task = suspended_task()
    store.save(task)
    back = store.get(task["id"])
    assert_pending_intact(back)
    assert back == task


def test_returned_task_is_not_the_stored_one(store: TaskStore) -> None:
    task = submitted_task()
    store.save(task)
    task["status"]["state"] = "canceled"  # the caller mutates its own dict afterwards
    back = store.get(task["id"])
    assert back is not None and back["status"]["state"] == "submitted"
    back["status"]["state"] = "failed"
    again = store.get(task["id"])
    assert again is not None and again["status"]["state"] == "submitted"


@pytest.mark.parametrize(
    "kind",
    ["memory", "file", pytest.param("django", marks=pytest.mark.django_db(transaction=True))],
)
def test_async_twins(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    task = suspended_task()

    async def main() -> tuple[Any, Any, Any]:
        try:
            await store.asave(task)
            back = await store.aget(task["id"])
            done = taskdicts.completed(task, "filed")
            await store.asave(done)
            return back, await store.aget(task["id"]), await store.aget("unknown")
        finally:
            # DjangoTaskStore's async twins run on asgiref's executor thread:
            # close that thread's connection so the test database can be dropped.
            from asgiref.sync import sync_to_async

            await sync_to_async(connections.close_all)()

    back, after, unknown = asyncio.run(main())
    assert_pending_intact(back)
    assert after["status"]["state"] == "completed"
    assert "pending" not in after[PRIVATE_KEY]
    assert unknown is None
    # The sync side sees what the async side wrote.
    assert store.get(task["id"]) == after


class DictStore(TaskStore):
    """A custom store that implements only the two sync methods."""

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}
        self.threads: list[int] = []

    def get(self, id: str) -> dict[str, Any] | None:
        self.threads.append(threading.get_ident())
        task = self.tasks.get(id)
        return json.loads(json.dumps(task)) if task is not None else None

    def save(self, task: dict[str, Any]) -> None:
        self.threads.append(threading.get_ident())
        self.tasks[task["id"]] = json.loads(json.dumps(task))


def test_custom_store_with_only_get_and_save_gets_async_twins() -> None:
    custom = DictStore()
    task = suspended_task()

    async def main() -> tuple[Any, Any, int]:
        await custom.asave(task)
        return await custom.aget(task["id"]), await custom.aget("nope"), threading.get_ident()

    back, unknown, loop_thread = asyncio.run(main())
    assert back == task
    assert unknown is None
    assert len(custom.threads) == 3
    # The blocking sync methods ran off the event loop's thread.
    assert loop_thread not in custom.threads


# --------------------------------------------------------------------------- #
# Durability: a new instance (and a new process) reads what another one wrote
# --------------------------------------------------------------------------- #


def test_file_store_new_instance_reads_pending_task(tmp_path: Path) -> None:
    task = suspended_task(owner="7")
    FileTaskStore(tmp_path).save(task)
    back = FileTaskStore(tmp_path).get(task["id"])
    assert_pending_intact(back)
    assert back == task
    # Plain JSON on disk, readable by anything: the seed reads status.state.
    on_disk = json.loads((tmp_path / f"{sanitize(task['id'])}.json").read_text("utf-8"))
    assert on_disk == task


@pytest.mark.django_db(transaction=True)
def test_django_store_new_instance_reads_pending_task() -> None:
    task = suspended_task()
    DjangoTaskStore().save(task)
    connections.close_all()  # the next read comes over a fresh connection
    back = DjangoTaskStore().get(task["id"])
    assert_pending_intact(back)
    assert back == task


def _read_in_subprocess(code: str, env: dict[str, str]) -> Any:
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_file_store_task_survives_into_another_process(tmp_path: Path) -> None:
    task = suspended_task()
    FileTaskStore(tmp_path).save(task)
    code = (
        "import json, os, django\n"
        "django.setup()\n"
        "from toolnexus_django.stores import FileTaskStore\n"
        "print(json.dumps(FileTaskStore(os.environ['TNX_DIR']).get(os.environ['TNX_ID'])))\n"
    )
    back = _read_in_subprocess(
        code,
        {
            "DJANGO_SETTINGS_MODULE": "testproject.settings",
            "TNX_DIR": str(tmp_path),
            "TNX_ID": task["id"],
        },
    )
    assert_pending_intact(back)
    assert back == task


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_django_store_task_survives_into_another_process(tmp_path: Path) -> None:
    task = suspended_task()
    DjangoTaskStore().save(task)
    # A settings module pointing the other process at this test database.
    (tmp_path / "other_process_settings.py").write_text(
        "import os\n"
        "from testproject.settings import *  # noqa: F403\n"
        "DATABASES['default']['NAME'] = os.environ['TNX_DB_NAME']\n"
    )
    code = (
        "import json, os, django\n"
        "django.setup()\n"
        "from toolnexus_django.stores import DjangoTaskStore\n"
        "print(json.dumps(DjangoTaskStore().get(os.environ['TNX_ID'])))\n"
    )
    back = _read_in_subprocess(
        code,
        {
            "DJANGO_SETTINGS_MODULE": "other_process_settings",
            "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{tmp_path}",
            "TNX_DB_NAME": str(connection.settings_dict["NAME"]),
            "TNX_ID": task["id"],
        },
    )
    assert_pending_intact(back)
    assert back == task


# --------------------------------------------------------------------------- #
# FileTaskStore: hostile ids stay inside the directory
# --------------------------------------------------------------------------- #

HOSTILE_IDS = [
    "../../x",
    "a/b",
    "..",
    ".",
    "/etc/passwd",
    "a\\b",
    "a\x00b",
    "\x00",
    "tâche-☃-日本語",
    "~root",
    "C:\\Windows\\system32",
    "x" * 250,
]


def task_files(directory: Path) -> list[Path]:
    """The directory's entries other than the store's own lock file."""
    return [p for p in directory.iterdir() if p.name != LOCK_NAME]


def _all_files(root: Path) -> set[Path]:
    return {p.resolve() for p in root.rglob("*")}


@pytest.fixture
def jail(tmp_path: Path) -> Iterator[tuple[Path, FileTaskStore]]:
    """A store three levels down, so ``../..`` escapes would still land in tmp_path."""
    directory = tmp_path / "a" / "b" / "store"
    store = FileTaskStore(directory)
    outside_before = _all_files(tmp_path) - _all_files(directory)
    yield directory, store
    outside_after = _all_files(tmp_path) - _all_files(directory)
    assert outside_after == outside_before, "a file was written outside the store directory"


@pytest.mark.parametrize("tid", HOSTILE_IDS, ids=repr)
def test_file_store_hostile_id_stays_inside(tid: str, jail: tuple[Path, FileTaskStore]) -> None:
    directory, store = jail
    assert store.get(tid) is None
    task = {"id": tid, "status": {"state": "working"}, "note": "hostile"}
    store.save(task)
    files = list(task_files(directory))
    assert [f.name for f in files] == [store.path_for(tid).name]
    assert files[0].resolve().parent == directory.resolve()
    assert store.path_for(tid).resolve() == files[0].resolve()
    assert store.get(tid) == task


def test_file_store_all_hostile_ids_together(jail: tuple[Path, FileTaskStore]) -> None:
    directory, store = jail
    for tid in HOSTILE_IDS:
        store.save({"id": tid, "status": {"state": "working"}})
    names = sorted(p.name for p in task_files(directory))
    assert names == sorted(store.path_for(t).name for t in HOSTILE_IDS)
    for path in task_files(directory):
        assert path.resolve().parent == directory.resolve()
    for tid in HOSTILE_IDS:
        back = store.get(tid)
        assert back is not None and back["id"] == tid
    assert store.get("x" * 250) is not None and store.get("/etc/passwd") is not None


def test_file_store_colliding_ids_never_return_the_wrong_task(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    assert sanitize("a/b") == sanitize("a_b") == sanitize("a\\b")
    store.save({"id": "a/b", "status": {"state": "working"}})
    assert store.get("a_b") is None
    assert store.get("a\\b") is None
    assert store.get("a/b") == {"id": "a/b", "status": {"state": "working"}}
    # Ids that sanitize alike still have a file each.
    store.save({"id": "a_b", "status": {"state": "completed"}})
    assert store.get("a_b") == {"id": "a_b", "status": {"state": "completed"}}
    assert store.get("a/b") == {"id": "a/b", "status": {"state": "working"}}
    assert sorted(p.name for p in task_files(tmp_path)) == sorted(
        [store.path_for("a/b").name, "a_b.json"]
    )


@pytest.mark.parametrize("length", [251, 255, 256, 10_000])
def test_file_store_overlong_ids_are_refused_cleanly(tmp_path: Path, length: int) -> None:
    """An id whose file name would exceed the file system's 255-byte limit is
    refused with ValueError (not an OSError half-way through) and is unknown."""
    store = FileTaskStore(tmp_path)
    tid = "y" * length
    with pytest.raises(ValueError):
        store.save({"id": tid, "status": {"state": "working"}})
    assert store.get(tid) is None
    assert list(task_files(tmp_path)) == []


def test_file_store_longest_id_round_trips(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    tid = "z" * 250  # 250 + ".json" = 255 bytes, the file-name limit
    store.save({"id": tid, "status": {"state": "working"}})
    assert [p.name for p in task_files(tmp_path)] == [tid + ".json"]
    assert store.get(tid) == {"id": tid, "status": {"state": "working"}}


@pytest.mark.parametrize("bad", [{}, {"id": ""}, {"id": 7}, "not a dict", None])
def test_saving_a_task_without_a_string_id_fails_clearly(bad: Any, tmp_path: Path) -> None:
    for store in (InMemoryTaskStore(), FileTaskStore(tmp_path)):
        with pytest.raises((TypeError, ValueError)):
            store.save(bad)
    assert list(task_files(tmp_path)) == []


# --------------------------------------------------------------------------- #
# FileTaskStore: concurrent writers and readers of one Task
# --------------------------------------------------------------------------- #

WRITERS = 4
READERS = 4
SAVES_PER_WRITER = 40
MAX_READS_PER_READER = 20_000


def _payload(tid: str, writer: int, seq: int) -> dict[str, Any]:
    marker = f"w{writer}-s{seq}"
    return {
        "id": tid,
        "status": {"state": "working"},
        "marker": marker,
        "blob": "|".join([marker] * 4000),  # ~30 KB: more than one write() chunk
        "history": [{"seq": seq, "writer": writer, "marker": marker}] * 50,
    }


def _consistent(task: dict[str, Any]) -> bool:
    marker = task["marker"]
    return task["blob"] == "|".join([marker] * 4000) and all(
        h["marker"] == marker for h in task["history"]
    )


def test_file_store_concurrent_writers_and_readers(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    tid = "contended-task"
    store.save(_payload(tid, -1, 0))  # readers start after the first save
    target = store.path_for(tid)

    errors: list[str] = []
    reads = [0] * READERS
    writers_done = threading.Event()
    start = threading.Barrier(WRITERS + READERS)

    def writer(w: int) -> None:
        start.wait(timeout=10)
        # Separate store instances, as separate processes would have.
        own = FileTaskStore(tmp_path)
        for seq in range(SAVES_PER_WRITER):
            own.save(_payload(tid, w, seq))

    def reader(r: int) -> None:
        start.wait(timeout=10)
        while not writers_done.is_set() and reads[r] < MAX_READS_PER_READER:
            reads[r] += 1
            try:
                task = store.get(tid)
                if task is None:
                    errors.append("get() returned None after the first save")
                elif not _consistent(task):
                    errors.append(f"mixed payload: {task['marker']}")
                # What another process would see: the raw file, parsed by hand.
                raw = json.loads(target.read_bytes())
                if not _consistent(raw):
                    errors.append("raw file holds a mixed payload")
            except Exception as exc:  # invalid JSON, missing file, ...
                errors.append(f"{type(exc).__name__}: {exc}")
            if len(errors) > 20:
                return

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    threads += [threading.Thread(target=reader, args=(r,)) for r in range(READERS)]
    for t in threads:
        t.start()
    for t in threads[:WRITERS]:
        t.join(timeout=120)
    writers_done.set()
    for t in threads[WRITERS:]:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)

    assert errors == []
    assert all(n > 0 for n in reads)
    final = store.get(tid)
    assert final is not None and _consistent(final)
    assert final["history"][0]["seq"] == SAVES_PER_WRITER - 1
    # Every temp file was renamed away: only the Task's own file remains.
    assert sorted(p.name for p in task_files(tmp_path)) == [target.name]


# --------------------------------------------------------------------------- #
# DjangoTaskStore specifics
# --------------------------------------------------------------------------- #


@pytest.mark.django_db
def test_django_store_columns_mirror_the_json() -> None:
    user = get_user_model().objects.create_user("alice", password="x")
    task = suspended_task(owner=str(user.pk))
    task["contextId"] = "ctx-mirror"
    DjangoTaskStore().save(task)

    row = TaskRecord.objects.get(pk=task["id"])
    assert row.state == "input-required"
    assert row.context_id == "ctx-mirror"
    assert row.owner_id == user.pk
    assert PRIVATE_KEY not in row.task, "the public column must not carry the private section"
    assert row.task["status"]["state"] == "input-required"
    assert row.private["pending"] == dataclasses.asdict(PENDING)

    done = taskdicts.completed(task, "filed")
    done[PRIVATE_KEY]["owner"] = None
    DjangoTaskStore().save(done)
    row.refresh_from_db()
    assert row.state == "completed"
    assert row.owner_id is None
    assert row.is_terminal


@pytest.mark.django_db
def test_queryset_finds_tasks_by_state() -> None:
    store = DjangoTaskStore()
    by_state: dict[str, str] = {}
    for state in ("submitted", "working", "input-required", "auth-required", "completed"):
        task = taskdicts.with_status(submitted_task(state), state)
        store.save(task)
        by_state[state] = task["id"]

    def ids(qs: Any) -> set[str]:
        return set(qs.values_list("id", flat=True))

    assert ids(TaskRecord.objects.awaiting_human()) == {
        by_state["input-required"],
        by_state["auth-required"],
    }
    assert ids(TaskRecord.objects.in_state("working")) == {by_state["working"]}
    assert ids(TaskRecord.objects.in_state("submitted", "completed")) == {
        by_state["submitted"],
        by_state["completed"],
    }
    assert ids(TaskRecord.objects.terminal()) == {by_state["completed"]}

    # A Task that is answered leaves the review queue.
    store.save(taskdicts.completed(store.get(by_state["input-required"]) or {}, "ok"))
    assert ids(TaskRecord.objects.awaiting_human()) == {by_state["auth-required"]}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "tid",
    ["a\x00b", "\x00", "x" * 10_000, "x" * 256, "", "../../x", "tâche-☃"],
    ids=["nul", "only-nul", "10k", "256", "empty", "dotdot", "unicode"],
)
def test_django_store_hostile_ids_on_get_are_unknown(tid: str) -> None:
    # Must not raise: PostgreSQL rejects NUL in text and the column is 255 long.
    assert DjangoTaskStore().get(tid) is None
    # The connection (and the test transaction) is still healthy afterwards.
    assert TaskRecord.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("tid", ["a\x00b", "x" * 256])
def test_django_store_refuses_to_save_an_impossible_id(tid: str) -> None:
    with pytest.raises(ValueError):
        DjangoTaskStore().save({"id": tid, "status": {"state": "working"}})
    assert TaskRecord.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("tid", ["../../x", "/etc/passwd", "a\\b", "tâche-☃-日本語", "y" * 255])
def test_django_store_keeps_odd_but_valid_ids_verbatim(tid: str) -> None:
    store = DjangoTaskStore()
    store.save({"id": tid, "status": {"state": "working"}})
    assert store.get(tid) == {"id": tid, "status": {"state": "working"}}
    assert TaskRecord.objects.filter(pk=tid).exists()


def test_django_store_repr_names_the_alias() -> None:
    assert repr(DjangoTaskStore()) == "<DjangoTaskStore using='default'>"
    assert repr(DjangoTaskStore(using="replica")) == "<DjangoTaskStore using='replica'>"
    assert DjangoTaskStore(using="replica").using == "replica"


@pytest.mark.django_db
def test_django_store_save_is_one_query(django_assert_num_queries: Any) -> None:
    store = DjangoTaskStore()
    task = suspended_task()
    with django_assert_num_queries(1):
        store.save(task)  # insert
    with django_assert_num_queries(1):
        store.save(taskdicts.completed(task, "filed"))  # update of the same row
    with django_assert_num_queries(1):
        back = store.get(task["id"])
    assert back is not None and back["status"]["state"] == "completed"
    assert TaskRecord.objects.count() == 1


# --------------------------------------------------------------------------- #
# resolve_store and get_task_store
# --------------------------------------------------------------------------- #


class ModuleLevelStore(DictStore):
    """Importable by dotted path: ``tests.stores.test_stores.ModuleLevelStore``."""


MODULE_LEVEL_INSTANCE = ModuleLevelStore()
NOT_A_STORE = "just a string"


def test_resolve_django_forms() -> None:
    store = resolve_store("django")
    assert isinstance(store, DjangoTaskStore) and store.using == "default"
    store = resolve_store("django:default")
    assert isinstance(store, DjangoTaskStore) and store.using == "default"


def test_resolve_file_form(tmp_path: Path) -> None:
    store = resolve_store(f"file:{tmp_path / 'made'}")
    assert isinstance(store, FileTaskStore)
    assert (tmp_path / "made").is_dir()


def test_resolve_a_store_class_instantiates_it() -> None:
    store = resolve_store(ModuleLevelStore)
    assert type(store) is ModuleLevelStore


def test_resolve_a_dotted_path() -> None:
    store = resolve_store("tests.stores.test_stores.ModuleLevelStore")
    assert type(store) is ModuleLevelStore
    assert store is not resolve_store("tests.stores.test_stores.ModuleLevelStore")
    # A dotted path to an instance is that very instance.
    assert resolve_store("tests.stores.test_stores.MODULE_LEVEL_INSTANCE") is MODULE_LEVEL_INSTANCE


@pytest.mark.parametrize(
    "bad",
    [
        "redis",
        "file:",
        "django:",
        42,
        "no.such.module.Store",
        "tests.stores.test_stores.NOT_A_STORE",
        "tests.stores.test_stores.DictStore.nope",
        "os.path.join",
        object(),
        ["memory"],
    ],
    # repr, but the same in every process that collects them (xdist's workers compare).
    ids=lambda bad: "object()" if type(bad) is object else repr(bad),
)
def test_resolve_rejects_everything_else(bad: Any) -> None:
    with pytest.raises(ImproperlyConfigured) as info:
        resolve_store(bad)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for form in ('"memory"', '"file:<dir>"', '"django"', "TaskStore", "dotted path"):
        assert form in message, f"{form} missing from: {message}"


@pytest.fixture
def store_setting(settings: Any) -> Callable[[Any], None]:
    def apply(value: Any) -> None:
        settings.TOOLNEXUS = {**settings.TOOLNEXUS, "STORE": value}

    return apply


def test_get_task_store_is_cached_until_the_setting_changes(
    store_setting: Callable[[Any], None], tmp_path: Path
) -> None:
    store_setting("memory")
    first = get_task_store()
    assert isinstance(first, InMemoryTaskStore)
    assert get_task_store() is first
    first.save({"id": "kept", "status": {"state": "working"}})
    assert get_task_store().get("kept") is not None  # one map per process

    store_setting(f"file:{tmp_path}")
    second = get_task_store()
    assert isinstance(second, FileTaskStore) and second.dir == tmp_path
    assert get_task_store() is second

    store_setting("memory")  # back to memory: a fresh, empty map
    third = get_task_store()
    assert isinstance(third, InMemoryTaskStore) and third is not first
    assert third.get("kept") is None


def test_get_task_store_uses_a_configured_instance_as_is(
    store_setting: Callable[[Any], None],
) -> None:
    mine = DictStore()
    store_setting(mine)
    assert get_task_store() is mine
    store_setting("tests.stores.test_stores.MODULE_LEVEL_INSTANCE")
    assert get_task_store() is MODULE_LEVEL_INSTANCE


def test_get_task_store_raises_for_a_bad_setting(store_setting: Callable[[Any], None]) -> None:
    store_setting("redis")
    with pytest.raises(ImproperlyConfigured):
        get_task_store()


@pytest.mark.django_db
def test_django_store_saves_nul_characters_anywhere_in_a_task() -> None:
    """PostgreSQL's jsonb rejects NUL; a peer's text or a tool output may carry
    one. It is stored as U+FFFD (on every database) instead of failing the save."""
    store = DjangoTaskStore()
    task = {
        "id": "nul-task",
        "status": {
            "state": "completed",
            "message": {"parts": [{"kind": "text", "text": "a\x00b"}]},
        },
        "_private": {"transcript": [{"role": "tool", "content": "out\x00put"}], "k\x00": 1},
    }
    store.save(task)
    back = store.get("nul-task")
    assert back is not None
    assert back["status"]["message"]["parts"][0]["text"] == "a\ufffdb"
    assert back["_private"]["transcript"][0]["content"] == "out\ufffdput"
    assert back["_private"]["k\ufffd"] == 1
    # A literal backslash-u0000 (six characters, not a NUL) is left alone.
    store.save({"id": "literal", "status": {"state": "working"}, "note": "\\u0000"})
    assert store.get("literal")["note"] == "\\u0000"
