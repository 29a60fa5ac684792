"""FileTaskStore file names: no two ids share a file.

An id ``sanitize`` leaves unchanged keeps the seed's ``<sanitize(id)>.json``
(``<id>.json``); any other id gets ``<sanitized, truncated>.<16 hex of sha256>.json``.
Tasks saved at the old ``<sanitize(id)>.json`` before this rule are still found
and move to their new name on the next write.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from toolnexus import sanitize

from toolnexus_django.stores import FileTaskStore
from toolnexus_django.stores.base import TerminalTaskError
from toolnexus_django.stores.file import LOCK_NAME

#: Four ids the old ``<sanitize(id)>.json`` rule put in one file, ``a_b.json``.
ALIKE = ["a/b", "a_b", "a.b", "a b"]

#: Ids sanitize changes: each needs a name of its own.
CHANGED = [
    "a/b",
    "a.b",
    "a b",
    "a\\b",
    "a\x00b",
    ".",
    "..",
    "\x00",
    "../../etc/passwd",
    "/etc/passwd",
    "~root",
    "C:\\Windows\\system32",
    "tâche-☃-日本語",
    "\ud800",  # a lone surrogate is still a str: it hashes too
    "\udfff",
    "日" * 255,
    "é" * 254 + "x",
]

SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]+")
LONG_AGO = "2000-01-01T00:00:00+00:00"


def task(tid: str, state: str = "working", **extra: Any) -> dict[str, Any]:
    return {"id": tid, "status": {"state": state, "timestamp": LONG_AGO}, **extra}


def task_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != LOCK_NAME)


def write_legacy(directory: Path, saved: dict[str, Any]) -> Path:
    """Write ``saved`` where the store kept it before names were injective."""
    path = directory / f"{sanitize(saved['id'])}.json"
    path.write_bytes(json.dumps(saved, ensure_ascii=False, separators=(",", ":")).encode())
    return path


# --------------------------------------------------------------------------- #
# Ids that sanitize alike are distinct Tasks
# --------------------------------------------------------------------------- #


def test_ids_that_sanitize_alike_are_four_tasks(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    assert len({sanitize(t) for t in ALIKE}) == 1
    for n, tid in enumerate(ALIKE):
        store.save(task(tid, payload=n))
    for n, tid in enumerate(ALIKE):
        assert store.get(tid) == task(tid, payload=n)
    assert len(task_files(tmp_path)) == 4


def test_each_alike_id_moves_on_its_own_with_compare_and_set(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    for n, tid in enumerate(ALIKE):
        store.save(task(tid, payload=n))
    for n, tid in enumerate(ALIKE):
        expected = store.get(tid)
        assert expected is not None
        assert store.compare_and_set(expected, task(tid, "input-required", payload=n))
        # Moving it again from the version it has left loses.
        assert not store.compare_and_set(expected, task(tid, "failed", payload=n))
        moved = store.get(tid)
        assert moved is not None and moved["status"]["state"] == "input-required"
        assert moved["_private"]["revision"] == 1
        for m, other in enumerate(ALIKE[n + 1 :], start=n + 1):
            assert store.get(other) == task(other, payload=m), "a neighbour changed"


def test_finishing_one_alike_id_does_not_block_the_others(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    for tid in ALIKE:
        store.save(task(tid))
    done = store.get("a/b")
    assert done is not None
    assert store.compare_and_set(done, task("a/b", "completed"))
    for tid in ALIKE[1:]:
        store.save(task(tid, "input-required"))
        stored = store.get(tid)
        assert stored is not None and stored["status"]["state"] == "input-required"
    with pytest.raises(TerminalTaskError):
        store.save(task("a/b", "working"))
    finished = store.get("a/b")
    assert finished is not None and finished["status"]["state"] == "completed"


# --------------------------------------------------------------------------- #
# The names
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "tid",
    [str(uuid.uuid4()), "t1", "t9", "contended-task", "z" * 250],
    # The same ids in every process that collects them (xdist's workers compare).
    ids=["a-uuid", "t1", "t9", "contended-task", "250-chars"],
)
def test_unchanged_ids_keep_the_seeds_file_name(tid: str, tmp_path: Path) -> None:
    """Server-made ids (UUIDs) and the seed's example ids: ``<id>.json``."""
    store = FileTaskStore(tmp_path)
    store.save(task(tid))
    assert task_files(tmp_path) == [f"{sanitize(tid)}.json"] == [f"{tid}.json"]
    assert store.path_for(tid) == tmp_path / f"{tid}.json"
    assert json.loads((tmp_path / f"{tid}.json").read_text("utf-8")) == task(tid)


def test_a_changed_id_is_named_sanitized_dot_hash(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"a/b").hexdigest()[:16]
    assert FileTaskStore(tmp_path).path_for("a/b") == tmp_path / f"a_b.{digest}.json"


def test_changed_ids_get_distinct_safe_names_of_at_most_255_bytes(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    names = [store.path_for(tid).name for tid in CHANGED]
    assert len(set(names)) == len(CHANGED)
    for name in names:
        assert SAFE_NAME.fullmatch(name), name
        assert len(name.encode("utf-8")) <= 255, name
        # The stem has a "." an unchanged id never has: no "<unchanged id>.json".
        assert "." in name.removesuffix(".json"), name
    # Not even the id a changed id sanitizes to shares its name.
    unchanged = {store.path_for(sanitize(tid)).name for tid in CHANGED}
    assert unchanged.isdisjoint(names)


def test_a_255_character_multibyte_id_round_trips(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    for tid in ["日" * 255, "é" * 254 + "x"]:
        store.save(task(tid))
        assert store.get(tid) == task(tid)
    assert all(len(name.encode()) <= 255 for name in task_files(tmp_path))
    assert len(task_files(tmp_path)) == 2


@pytest.mark.parametrize("tid", ["y" * 251, "日" * 256, "a/" * 128])
def test_ids_that_cannot_be_stored_are_still_refused(tid: str, tmp_path: Path) -> None:
    """Unchanged ids: at most 250 characters (+ ".json" = 255 bytes); changed
    ids: at most the store's MAX_ID_LENGTH, 255."""
    store = FileTaskStore(tmp_path)
    with pytest.raises(ValueError):
        store.save(task(tid))
    assert store.get(tid) is None
    assert task_files(tmp_path) == []


def test_a_traversing_id_stays_in_the_directory(tmp_path: Path) -> None:
    directory = tmp_path / "a" / "b" / "store"
    store = FileTaskStore(directory)
    store.save(task("../../etc/passwd"))
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != LOCK_NAME]
    assert [p.parent for p in written] == [directory]
    assert store.path_for("../../etc/passwd").parent == directory
    assert store.get("../../etc/passwd") == task("../../etc/passwd")


# --------------------------------------------------------------------------- #
# Tasks saved under the legacy name
# --------------------------------------------------------------------------- #


def test_a_legacy_file_is_still_read_while_alike_ids_are_saved(tmp_path: Path) -> None:
    legacy = write_legacy(tmp_path, task("a/b", payload="old"))
    store = FileTaskStore(tmp_path)
    assert store.get("a/b") == task("a/b", payload="old")
    assert store.get("a_b") is None, "a_b.json holds a/b, not a_b"
    assert store.get("a.b") is None
    store.save(task("a.b", payload="a.b's"))
    store.save(task("a b", payload="a b's"))
    assert store.get("a/b") == task("a/b", payload="old")
    assert legacy.exists(), "only a write of a/b itself (or of a_b) moves it"


def test_saving_a_legacy_task_moves_it_to_its_new_name(tmp_path: Path) -> None:
    legacy = write_legacy(tmp_path, task("a/b", payload="old"))
    store = FileTaskStore(tmp_path)
    store.save(task("a/b", payload="new"))
    assert task_files(tmp_path) == [store.path_for("a/b").name]
    assert not legacy.exists()
    assert store.get("a/b") == task("a/b", payload="new")


def test_migrating_leaves_another_ids_legacy_file_alone(tmp_path: Path) -> None:
    legacy = write_legacy(tmp_path, task("a.b", payload="a.b's"))
    before = legacy.read_bytes()
    store = FileTaskStore(tmp_path)
    store.save(task("a/b", payload="a/b's"))
    assert legacy.read_bytes() == before
    assert store.get("a.b") == task("a.b", payload="a.b's")
    assert store.get("a/b") == task("a/b", payload="a/b's")


def test_saving_the_id_whose_name_a_legacy_file_has_keeps_that_task(tmp_path: Path) -> None:
    """a_b.json is both a_b's name and a/b's legacy file: saving a_b first
    moves a/b to its own name instead of overwriting it."""
    write_legacy(tmp_path, task("a/b", "completed", payload="a/b's"))
    store = FileTaskStore(tmp_path)
    store.save(task("a_b", payload="a_b's"))
    assert store.get("a_b") == task("a_b", payload="a_b's")
    assert store.get("a/b") == task("a/b", "completed", payload="a/b's")
    assert task_files(tmp_path) == sorted(["a_b.json", store.path_for("a/b").name])


def test_compare_and_set_reads_a_legacy_file_like_get(tmp_path: Path) -> None:
    write_legacy(tmp_path, task("a/b", "input-required"))
    write_legacy(tmp_path, task("x.y", "completed"))
    store = FileTaskStore(tmp_path)
    expected = store.get("a/b")
    assert expected is not None
    assert store.compare_and_set(expected, task("a/b", "working"))
    assert not (tmp_path / "a_b.json").exists(), "the transition moved a/b to its new name"
    assert task_files(tmp_path) == sorted(["x_y.json", store.path_for("a/b").name])
    # A finished legacy Task never changes either.
    finished = store.get("x.y")
    assert finished is not None
    assert not store.compare_and_set(finished, task("x.y", "working"))
    with pytest.raises(TerminalTaskError):
        store.save(task("x.y", "working"))
    assert store.get("x.y") == task("x.y", "completed")


# --------------------------------------------------------------------------- #
# Sweeps
# --------------------------------------------------------------------------- #


def test_sweeps_see_each_task_once(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    server_made = str(uuid.uuid4())
    write_legacy(tmp_path, task("p/q", "input-required"))  # legacy file only
    store.save(task("p.q", "input-required"))  # new name only
    store.save(task(server_made, "submitted"))
    # Mid-migration: a stale legacy copy next to the newer file; the new one counts.
    write_legacy(tmp_path, task("r.s", "input-required"))
    store.path_for("r.s").write_text(json.dumps(task("r.s", "submitted")), "utf-8")
    assert len(task_files(tmp_path)) == 5

    assert sorted(store.waiting_ids()) == ["p.q", "p/q"]
    now = datetime.now(UTC)
    stale = store.stale_ids(now, submitted_before=now, unleased_before=now - timedelta(hours=1))
    assert sorted(stale) == sorted(["r.s", server_made])
