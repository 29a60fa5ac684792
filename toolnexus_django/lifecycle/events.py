"""Events: one per transition, made by the move itself.

Every move but ``renew`` records an :class:`Event`: the Task's id, a
sequence number (1 for ``submit``, then one more per move, no gaps), the kind
of move, the states it went from and to, when, who (``actor`` and whether a
``user``, a ``worker`` or the ``system``), the way it came (``via``: a2a,
admin, expiry, recovery, worker, shutdown, api), a public part (the status it
left the Task in, the ids of artifacts it added) and a private part (a
decision, a comment, an error, attempts).

The store writes the event with the change, or neither: the django store as a
``TaskEvent`` row in the same transaction as the Task's row; the file and
memory stores (and a custom store) with the Task itself, its last
:data:`KEPT_INLINE` events. A compare-and-set that loses writes no event.

Events are never rewritten: one stored under a kind renamed since
(:data:`RENAMED_KINDS`) reads under its new name (:func:`current`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

#: Events a store without an event table keeps with each Task (the newest).
KEPT_INLINE = 100

USER = "user"
WORKER = "worker"
SYSTEM = "system"

#: Event kinds renamed since events were stored -> their name now, and the
#: decision their private part records under each: a reviewer's "claim" is
#: a "hold" (the word "claim" stays with a worker taking a run).
RENAMED_KINDS: dict[str, tuple[str, dict[str, str]]] = {
    "review_claim": ("review_hold", {"claim": "hold"}),
}


def current(data: dict[str, Any]) -> dict[str, Any]:
    """A stored event (a dict) as this version names it: ``data`` itself,
    or a copy under the new kind and decision when it was renamed."""
    renamed = RENAMED_KINDS.get(str(data.get("kind") or ""))
    if renamed is None:
        return data
    kind, decisions = renamed
    private = dict(data.get("private") or {})
    if private.get("decision") in decisions:
        private["decision"] = decisions[private["decision"]]
    return {**data, "kind": kind, "private": private}


@dataclass(frozen=True)
class Event:
    task_id: str
    seq: int
    kind: str
    from_state: str
    to_state: str
    at: str
    actor: str = ""
    actor_kind: str = SYSTEM
    via: str = ""
    public: dict[str, Any] = field(default_factory=dict)
    private: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies every part, on every move.
        return {f: getattr(self, f) for f in _FIELDS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        """The event stored as ``data`` (a renamed kind under its name now)."""
        data = current(data)
        return cls(
            task_id=str(data.get("task_id") or ""),
            seq=int(data.get("seq") or 0),
            kind=str(data.get("kind") or ""),
            from_state=str(data.get("from_state") or ""),
            to_state=str(data.get("to_state") or ""),
            at=str(data.get("at") or ""),
            actor=str(data.get("actor") or ""),
            actor_kind=str(data.get("actor_kind") or SYSTEM),
            via=str(data.get("via") or ""),
            public=dict(data.get("public") or {}),
            private=dict(data.get("private") or {}),
        )

    @property
    def status(self) -> dict[str, Any]:
        """The public status the move left the Task in."""
        return dict(self.public.get("status") or {"state": self.to_state})

    @property
    def artifact_ids(self) -> list[str]:
        return [str(a) for a in self.public.get("artifacts") or ()]


_FIELDS = tuple(f.name for f in fields(Event))
