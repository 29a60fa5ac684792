"""A server shared by many tests (``asgi_server``, one per session and
xdist worker; ``live_server`` alike) shows each test none of the Tasks of
the tests before it: it keeps no Task of its own — the store is the test's
database, emptied between tests (Django's flush, as pytest-django runs it
after each test whose transactions commit) — and what one caller owns no
other caller reads. So sharing a server to save its start-up is safe."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command

from tests.conftest import RpcClient, basic
from tests.fakes import FakeLLM, Text

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

V1 = {"A2A-Version": "1.0"}


def flush_as_between_tests() -> None:
    """What pytest-django does after a test whose transactions commit."""
    call_command("flush", verbosity=0, interactive=False, reset_sequences=False)


def test_a_task_left_by_one_test_is_gone_for_the_next_on_the_shared_server(
    asgi_server: Any, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.push(Text("done"))
    rpc = RpcClient(f"{asgi_server.url}/agent/")
    listing = RpcClient(f"{asgi_server.url}/agent/", headers=V1)
    earlier = rpc.send("a task of the test before")
    assert rpc.wait(earlier["id"])["status"]["state"] == "completed"
    assert [t["id"] for t in listed(listing)] == [earlier["id"]]

    flush_as_between_tests()

    # The same server, the next test: the Task is gone, and nothing lists it.
    missing = rpc.call("GetTask", {"id": earlier["id"]})
    assert missing["error"]["code"] == -32001, missing
    assert listed(listing) == []


def test_on_a_shared_server_a_caller_reads_only_its_own_tasks(
    asgi_server: Any, configure: Any, fake_llm: FakeLLM, users: dict[str, Any]
) -> None:
    configure(
        fake_llm,
        AUTHENTICATION_CLASSES=["rest_framework.authentication.BasicAuthentication"],
        PERMISSION_CLASSES=["rest_framework.permissions.IsAuthenticated"],
    )
    fake_llm.push(Text("alice's"), Text("bob's"))
    url = f"{asgi_server.url}/agent/"
    alice, bob = (RpcClient(url, headers=basic(name)) for name in ("alice", "bob"))
    mine = alice.wait(alice.send("alice's task")["id"])
    theirs = bob.wait(bob.send("bob's task")["id"])
    for who, own in (("alice", mine), ("bob", theirs)):
        listing = RpcClient(url, headers={**V1, **basic(who)})
        assert [t["id"] for t in listed(listing)] == [own["id"]]
    assert alice.call("GetTask", {"id": theirs["id"]})["error"]["code"] == -32001


def listed(rpc: RpcClient) -> list[dict[str, Any]]:
    """ListTasks (A2A v1.0) as ``rpc``'s caller."""
    return list(rpc.call("ListTasks", {})["result"]["tasks"])
