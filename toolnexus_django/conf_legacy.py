"""Keys of ``TOOLNEXUS`` that retired or moved, and how a setting as written reads them.

A retired key is ignored (the system checks warn, ``toolnexus_django.W003``); a key that moved
is still honoured under its new name for now (they warn, ``W101``), the new key winning where
both are set. :func:`toolnexus_django.conf.merge` applies :data:`MOVED` with
:func:`read_moved`; the checks and the CHANGELOG read both tables.
"""

from __future__ import annotations

from typing import Any

#: Keys that once meant something and no longer do -> what to use instead
#: (the system checks warn, toolnexus_django.W003; they are otherwise ignored).
RETIRED: dict[str, str] = {
    "WORKER_THREADS": "runs hold no thread any more; MAX_RUNS bounds the runs in flight",
}

#: Keys that moved -> where they are read now, (section, key). An old key is
#: its path: a top-level key, or a key of a section. Still honoured for now
#: (the system checks warn, toolnexus_django.W101); the new key, where set, wins.
MOVED: dict[tuple[str, ...], tuple[str, str]] = {
    ("REVIEW_NOTIFY_EMAILS",): ("REVIEW", "NOTIFY_EMAILS"),
    ("REVIEW_BASE_URL",): ("REVIEW", "BASE_URL"),
    # A reviewer "holds" a Task; the word "claim" is a worker's (a run's lease).
    ("REVIEW", "CLAIM_SECONDS"): ("REVIEW", "HOLD_SECONDS"),
}


def written(user: dict[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    """Whether the setting as written (``user``) sets ``path`` (a key, or a
    section's key), and to what."""
    value: Any = user
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def read_moved(user: dict[str, Any], merged: dict[str, Any]) -> None:
    """Read the keys that moved (:data:`MOVED`) of ``user`` under their new
    name in ``merged`` (the defaults overlaid with ``user``), in place."""
    for old, (section, key) in MOVED.items():
        found, value = written(user, old)
        if len(old) > 1:
            merged[old[0]].pop(old[1], None)  # a section reads it under its new name only
        if found and not written(user, (section, key))[0]:
            merged[section][key] = value
