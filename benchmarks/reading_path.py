"""What reading a request costs: ``a2a.methods.dispatch`` of a v1.0 GetTask
(a completed Task in the memory store) and of a v1.0 SendMessage
(``returnImmediately``, actions that save nothing), in this process — no HTTP,
no database: the checks, renames and conversions a request goes through
before its operation touches a store.

Not a test. Run it from a tree's root, so that tree's ``toolnexus_django`` is
imported (the venv is the same)::

    PYTHONPATH=. .venv/bin/python benchmarks/reading_path.py
    git archive main | tar -x -C /tmp/main
    (cd /tmp/main && PYTHONPATH=. /path/to/.venv/bin/python /path/to/benchmarks/reading_path.py)

Prints the best of 7 rounds of 20,000 dispatches of each, in µs.
"""

from __future__ import annotations

import os
import timeit
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")

import django

django.setup()

import toolnexus_django  # noqa: E402
from toolnexus_django.a2a.jsonrpc import RpcRequest  # noqa: E402
from toolnexus_django.a2a.methods import CallContext, dispatch  # noqa: E402
from toolnexus_django.stores import InMemoryTaskStore  # noqa: E402

TASK: dict[str, Any] = {
    "id": "t-1",
    "contextId": "c-1",
    "kind": "task",
    "status": {"state": "completed", "timestamp": "2026-12-02T10:00:00.000Z"},
    "history": [
        {
            "kind": "message",
            "role": "user",
            "messageId": "m",
            "parts": [{"kind": "text", "text": "hi"}],
        }
    ],
    "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "done"}]}],
}
REQUESTS = {
    "GetTask": RpcRequest(id=1, method="GetTask", params={"id": "t-1", "historyLength": 1}),
    "SendMessage": RpcRequest(
        id=1,
        method="SendMessage",
        params={
            "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]},
            "configuration": {"returnImmediately": True},
        },
    ),
}


class SavesNothing:
    """Actions whose start hands back the one Task (the send's reading is measured)."""

    def start(self, message: dict[str, Any], *, owner: str | None, text: str) -> dict[str, Any]:
        return TASK

    def push_configs(self) -> None:
        return None


def main() -> None:
    store = InMemoryTaskStore()
    store.save(TASK)
    ctx = CallContext(store=store, actions=SavesNothing(), a2a_version="1.0")  # type: ignore[arg-type]
    print(os.path.dirname(toolnexus_django.__file__))
    rounds = 20_000
    for name, request in REQUESTS.items():
        best = min(timeit.repeat(lambda r=request: dispatch(r, ctx), number=rounds, repeat=7))
        print(f"{name}: {best / rounds * 1e6:.2f} µs per dispatch")


if __name__ == "__main__":
    main()
