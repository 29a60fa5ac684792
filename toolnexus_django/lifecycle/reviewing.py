"""Reviewers on a waiting Task: claims, releases, first approvals (four
eyes), and the sweep's reminder and escalation marks.

Each is a move of the waiting Task that keeps its public state: recorded as
an event (the Task's history of who looked, who approved), made by
compare-and-set (two reviewers claiming at once: one wins), and never sent on
the wire (:data:`.states.UNSEEN`). The review state lives in the private
section's ``review`` key and is dropped when the Request is answered.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from ..conf import toolnexus_settings
from ..stores import TaskStore
from ..stores.base import Task, parse_instant
from .events import SYSTEM, USER
from .moves import Moved, begin, commit
from .private import read
from .requests import AnswerRefused


def claim_seconds() -> float:
    return float(toolnexus_settings.REVIEW["CLAIM_SECONDS"] or 0)


def claim_of(task: Task | None, now: datetime | None = None) -> dict[str, Any] | None:
    """Who holds ``task`` for review and since when (``{"by", "at"}``), or
    None — also when the claim is older than ``CLAIM_SECONDS`` (it lapsed)."""
    review = read(task).review or {}
    claim = review.get("claim")
    if not isinstance(claim, dict) or not claim.get("by"):
        return None
    since = parse_instant(str(claim.get("at") or ""))
    if since is None:
        return None
    if since + timedelta(seconds=claim_seconds()) <= (now or timezone.now()):
        return None
    return {"by": str(claim["by"]), "at": since}


def approvals_of(task: Task | None) -> list[dict[str, Any]]:
    """The approvals a four-eyes Request has so far (``{"by", "at", "comment"}``)."""
    review = read(task).review or {}
    return [a for a in review.get("approvals") or () if isinstance(a, dict)]


def approvals_needed(tool: str | None) -> int:
    """How many different reviewers must approve a Request of ``tool``."""
    wanted = (toolnexus_settings.REVIEW["APPROVALS"] or {}).get(tool or "")
    try:
        return max(1, int(wanted or 1))
    except (TypeError, ValueError):
        return 1


def _review_move(
    store: TaskStore,
    task: Task,
    kind: str,
    change: dict[str, Any],
    *,
    actor: str,
    via: str,
    detail: dict[str, Any],
    drop: tuple[str, ...] = (),
) -> Moved | None:
    new, private = begin(task, kind)
    review = {k: v for k, v in (private.review or {}).items() if k not in drop}
    private.review = {**review, **change}
    pending = private.pending or {}
    return commit(
        store, task, new, private, kind, actor=actor,
        actor_kind=SYSTEM if via == "sweep" else USER, via=via,
        detail={"request": pending.get("id"), "kind": pending.get("kind"), **detail},
    )  # fmt: skip


def claim_review(
    store: TaskStore, task: Task, *, reviewer: str, take_over: bool = False, via: str = "admin"
) -> Moved | None:
    """``reviewer`` claims the waiting ``task``: ``None`` when another writer
    moved it first (two reviewers claiming at once: one wins). Refused
    (:class:`AnswerRefused` ``"claimed"``) while another reviewer's claim
    holds, unless ``take_over``."""
    held = claim_of(task)
    if held is not None and held["by"] != reviewer and not take_over:
        raise AnswerRefused("claimed", f"This task is being reviewed by {held['by']}.", task=task)
    now = timezone.now().isoformat()
    detail: dict[str, Any] = {"decision": "claim"}
    if held is not None and held["by"] != reviewer:
        detail["took_over_from"] = held["by"]
    return _review_move(
        store, task, "review_claim", {"claim": {"by": reviewer, "at": now}},
        actor=reviewer, via=via, detail=detail,
    )  # fmt: skip


def release_review(
    store: TaskStore, task: Task, *, reviewer: str, via: str = "admin"
) -> Moved | None:
    """``reviewer`` gives back their claim (or clears a lapsed one): ``None``
    when another writer moved the Task first. Refused (``"claimed"``) while
    another reviewer's claim holds."""
    held = claim_of(task)
    if held is not None and held["by"] != reviewer:
        raise AnswerRefused("claimed", f"This task is being reviewed by {held['by']}.", task=task)
    return _review_move(
        store, task, "review_release", {}, actor=reviewer, via=via,
        detail={"decision": "release"}, drop=("claim",),
    )  # fmt: skip


def first_approval(
    store: TaskStore, task: Task, *, reviewer: str, comment: str, needed: int, via: str
) -> Moved | None:
    """One more approval of a Request that needs ``needed`` (four eyes): the
    Task keeps waiting; ``None`` when another writer moved it first."""
    approvals = approvals_of(task)
    entry = {"by": reviewer, "at": timezone.now().isoformat(), "comment": comment}
    return _review_move(
        store, task, "review_approval", {"approvals": [*approvals, entry]},
        actor=reviewer, via=via,
        detail={"decision": "approve", "comment": comment,
                "approvals": len(approvals) + 1, "needed": needed},
        drop=("claim",),
    )  # fmt: skip


def mark_sent(
    store: TaskStore, task: Task, kind: str, *, at: datetime | None = None
) -> Moved | None:
    """The sweep's reminder (``kind="remind"``) or escalation (``"escalate"``)
    of ``task``: recorded once, as sent ``at`` (the sweep's clock; default
    now). Whoever's compare-and-set wins sends it; a ``None`` means another
    process did (or the Task moved)."""
    key = "reminded" if kind == "remind" else "escalated"
    if (read(task).review or {}).get(key):
        return None
    when = (at or timezone.now()).isoformat()
    return _review_move(
        store, task, kind, {key: when}, actor="system", via="sweep",
        detail={"decision": kind},
    )  # fmt: skip
