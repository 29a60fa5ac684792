"""What the wake-up channel's notifications say (:mod:`.listener`): a move's
``<task id>:<seq>`` (migration 0012) and a run's live updates'
``<task id>:<seq>.<last>`` (migration 0013). Anything else (a probe) is neither."""

from __future__ import annotations


def parse_payload(payload: str) -> tuple[str, int] | None:
    """``"<task id>:<seq>"`` -> ``(task id, seq)``; None for anything else (a
    probe, a live update). A Task id may hold ``:``: the seq is what follows
    the last one."""
    task_id, colon, seq = payload.rpartition(":")
    if not colon or not task_id or not (seq.isascii() and seq.isdigit()):
        return None
    return task_id, int(seq)


def parse_live_payload(payload: str) -> tuple[str, int, int] | None:
    """``"<task id>:<seq>.<last>"`` (migration 0013's, for a run's live
    updates) -> ``(task id, seq, last)``; None for anything else."""
    task_id, colon, where = payload.rpartition(":")
    seq, dot, last = where.partition(".")
    digits = seq.isascii() and seq.isdigit() and last.isascii() and last.isdigit()
    if not colon or not task_id or not dot or not digits:
        return None
    return task_id, int(seq), int(last)
