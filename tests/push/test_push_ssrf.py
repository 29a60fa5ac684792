"""Which webhook URLs the server calls (push notifications' SSRF rules): the
corpus of URL forms (tests/corpus/ssrf_urls.py) through the check under no
allowlist, one naming the URL's host, and ``*``; and over the wire, a 6to4
form of loopback is refused at creation and never called."""

from __future__ import annotations

import re
import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import RpcClient, wait_until
from tests.corpus.ssrf_urls import CASES, OK, Case
from tests.fakes import FakeLLM, Text
from tests.webhooks import Receiver
from toolnexus_django.models import PushConfig
from toolnexus_django.push.delivery import deliver
from toolnexus_django.push.ssrf import RefusedURL, check_url

V1 = {"A2A-Version": "1.0"}


def resolver_for(case: Case) -> Any:
    def resolve(host: str, port: int) -> list[str]:
        if not case.resolves:
            raise OSError(f"{host}: no such name in this test")
        return list(case.resolves)

    return resolve


def own_host(url: str) -> list[str]:
    try:
        return [urlsplit(url).hostname or ""]
    except ValueError:
        return []


def verdict(case: Case, allowlist: list[str]) -> str:
    try:
        check_url(case.url, allowlist, resolver_for(case))
    except RefusedURL as refused:
        return str(refused)
    return OK


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.url} {c.note}".strip())
def test_every_url_form_gets_its_verdict(case: Case) -> None:
    for allowlist, expected in (
        ([], case.alone),
        (own_host(case.url), case.named),
        (["*"], case.star),
    ):
        got = verdict(case, allowlist)
        if expected == OK:
            assert got == OK, (allowlist, got)
        else:
            assert re.search(re.escape(expected), got), (allowlist, got)


def test_a_checked_url_is_called_at_the_address_it_stands_for() -> None:
    # Odd forms connect to the address that was decided, never a second reading.
    assert check_url("http://0x7f.1:9/", ["127.0.0.1"]).address == "127.0.0.1"
    target = check_url("http://b\u00fccher.example/", resolver=lambda h, p: ["93.184.216.34"])
    assert target.host == "xn--bcher-kva.example"  # what goes in Host and SNI: ASCII
    # An address in the allowlist admits that address however the URL writes it.
    assert check_url("http://2130706433/", ["127.0.0.1"]).address == "127.0.0.1"
    assert check_url("http://127.0.0.1/", ["0x7f000001"]).address == "127.0.0.1"
    # ... and not another form that merely embeds it.
    with pytest.raises(RefusedURL, match="loopback"):
        check_url("http://[2002:7f00:1::]/", ["127.0.0.1"])
    # A .suffix admits names under it, never an address.
    with pytest.raises(RefusedURL, match="loopback"):
        check_url("http://127.0.0.1/", [".0.1"])


# -- over the wire ---------------------------------------------------------------------


def test_a_6to4_loopback_form_is_refused_at_creation_and_never_called(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)  # no allowlist at all
    fake_llm.default = Text("done")
    rpc = RpcClient(agent_url, V1)
    with Receiver() as hook:
        disguised = f"http://[2002:7f00:1::]:{hook.port}/hook"  # 127.0.0.1, in 6to4
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "x"}]}
        inline = rpc.call(
            "SendMessage",
            {
                "message": message,
                "configuration": {
                    "returnImmediately": True,
                    "taskPushNotificationConfig": {"url": disguised},
                },
            },
        )
        assert inline["error"]["code"] == -32602, inline
        assert "stands for 127.0.0.1, a loopback address" in inline["error"]["message"]
        task_id = rpc.call(
            "SendMessage", {"message": message, "configuration": {"returnImmediately": True}}
        )["result"]["task"]["id"]
        made = rpc.call("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": disguised})
        assert made["error"]["code"] == -32602
        assert made["error"]["data"][0]["metadata"]["reason"] == "PUSH_URL_REFUSED"
        assert not PushConfig.objects.filter(task_id=task_id).exists()
        # One stored before this rule is refused at delivery: disabled, not called.
        rpc.wait(task_id, states=("TASK_STATE_COMPLETED",))
        config = PushConfig.objects.create(
            task_id=task_id, config_id="old", url=disguised, dialect="1.0", delivered_seq=0
        )
        wait_until(
            lambda: (
                deliver(config.pk) == "disabled"
                or PushConfig.objects.filter(pk=config.pk, disabled_at__isnull=False).exists()
            ),
            what="the delivery to refuse the stored URL",
        )
        config.refresh_from_db()
        assert "no longer allowed" in config.disabled_reason
        assert "127.0.0.1" in config.disabled_reason
        assert hook.connections == 0 and hook.received == []
