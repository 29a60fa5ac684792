"""Would the official a2a-sdk's generated types replace our hand-written shapes?

Issue 21 asks to use them "where they would replace hand-written shapes with
less code and no loss of speed". This times, for one completed Task (a user
message, an artifact), in process, best of 5 x N:

* ``render_task`` — our v1.0 rendering of a stored Task (what JSON-RPC and
  HTTP+JSON answer, before ``strictjson.dumps``);
* the same through the generated types: ``json_format.ParseDict`` into
  ``a2a_pb2.Task`` and ``MessageToDict`` back (what validating and
  rendering with them would add per Task);
* the gRPC binding's ``grpcmessages.as_message`` (our v1.0 dict into the
  generated ``a2a_pb2.Task``) against ``ParseDict`` doing the same.

    PYTHONPATH=. .venv/bin/python benchmarks/generated_types.py
"""

from __future__ import annotations

import os
import timeit
from collections.abc import Callable
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")

import django

django.setup()

from a2a.types import a2a_pb2  # noqa: E402
from google.protobuf.json_format import MessageToDict, ParseDict  # noqa: E402

from tests.taskdicts import completed, new_task  # noqa: E402
from toolnexus_django.a2a.dialects import Dialect, render_task  # noqa: E402
from toolnexus_django.serving.grpcmessages import as_message  # noqa: E402

N = 5_000


def best_us(fn: Callable[[], Any]) -> float:
    return min(timeit.repeat(fn, number=N, repeat=5)) / N * 1e6


def main() -> None:
    message = {"role": "user", "parts": [{"kind": "text", "text": "add 2 and 3"}], "messageId": "m"}
    task = completed(new_task(message, text="add 2 and 3", owner="1"), "5")
    v1 = render_task(task, Dialect.V10)
    parsed = ParseDict(v1, a2a_pb2.Task(), ignore_unknown_fields=True)
    assert as_message(v1, a2a_pb2.Task) == parsed

    rows = [
        ("render_task (ours, v1.0 dict)", best_us(lambda: render_task(task, Dialect.V10))),
        (
            "ParseDict + MessageToDict (generated types)",
            best_us(lambda: MessageToDict(ParseDict(v1, a2a_pb2.Task()))),
        ),
        ("grpcmessages.as_message (gRPC binding)", best_us(lambda: as_message(v1, a2a_pb2.Task))),
        ("ParseDict into a2a_pb2.Task", best_us(lambda: ParseDict(v1, a2a_pb2.Task()))),
    ]
    for name, us in rows:
        print(f"{name:45} {us:8.1f} µs per Task")


if __name__ == "__main__":
    main()
