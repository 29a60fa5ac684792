"""Push notifications (toolnexus_django/push/) against a real webhook receiver
on 127.0.0.1, allowed through TOOLNEXUS["PUSH"]["ALLOWED_HOSTS"]: configs in
every dialect and binding, every transition delivered in order with its
token and event id, retries with growing delays, disabling, SSRF refusals."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from toolnexus import Answer

from tests.conftest import RpcClient, basic, http, wait_until
from tests.fakes import FakeLLM, Hang, Text, ToolCall
from tests.webhooks import Received, Receiver
from toolnexus_django import lifecycle
from toolnexus_django.models import PushConfig, PushDelivery
from toolnexus_django.push.delivery import deliver
from toolnexus_django.review import answer_task
from toolnexus_django.stores import get_task_store

EXPENSE = ToolCall("file_expense", {"amount": 12.5, "description": "taxi"})
V1 = {"A2A-Version": "1.0"}
ALLOW = {"ALLOWED_HOSTS": ["127.0.0.1"], "RETRY_DELAY": 0.1, "MAX_ATTEMPTS": 4}
BASIC_ONLY = {
    "AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
    "PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
}


def v1_message(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **fields,
    }


def v03_message(text: str) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }


def send_with_config(rpc: RpcClient, text: str, config: dict[str, Any]) -> dict[str, Any]:
    """A v1.0 SendMessage returning at once, with ``config`` inline (the reply)."""
    return rpc.call(
        "SendMessage",
        {
            "message": v1_message(text),
            "configuration": {"returnImmediately": True, "taskPushNotificationConfig": config},
        },
    )


def approve(task_id: str) -> None:
    """A reviewer approves the Task's expense claim (as the admin would)."""
    pending = lifecycle.read(get_task_store().get(task_id)).pending or {}
    answer = Answer(id=pending.get("id"), ok=True, data={"cost_center": "travel"})
    answer_task(task_id, answer, decision="approve", actor="reviewer")


def distinct(states: list[str]) -> list[str]:
    out: list[str] = []
    for state in states:
        if not out or out[-1] != state:
            out.append(state)
    return out


def order_key(event_id: str) -> tuple[int, int]:
    head, _, k = event_id.partition(".")
    return int(head), int(k or 0)


def assert_in_order(received: list[Received], token: str) -> None:
    ids = [r.headers["x-a2a-event-id"] for r in received]
    assert len(set(ids)) == len(ids), ids
    assert ids == sorted(ids, key=order_key), ids
    assert all(r.headers.get("x-a2a-notification-token") == token for r in received)


def wait_state(received: Receiver, state: str) -> list[Received]:
    return wait_until(
        lambda: [r for r in received.received if r.state == state] and list(received.received),
        what=f"a notification of {state}",
    )


# -- every transition, in order, in each dialect ------------------------------------------


def test_v1_inline_config_gets_every_transition_in_order(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, PUSH=ALLOW)
    fake_llm.push(EXPENSE, Text("Your claim is filed."))
    rpc = RpcClient(agent_url, V1)
    with Receiver() as hook:
        config = {
            "url": hook.url,
            "token": "tok-v1",
            "authentication": {"scheme": "Bearer", "credentials": "s3cret"},
        }
        sent = send_with_config(rpc, "file an expense of 12.5 for a taxi", config)
        task_id = sent["result"]["task"]["id"]
        wait_state(hook, "TASK_STATE_INPUT_REQUIRED")
        approve(task_id)
        wait_state(hook, "TASK_STATE_COMPLETED")
        got = list(hook.received)
    assert distinct([r.state for r in got if r.state]) == [
        "TASK_STATE_WORKING",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ]
    assert_in_order(got, "tok-v1")
    assert all(r.headers["authorization"] == "Bearer s3cret" for r in got)
    # The artifact comes as its own update, before the final status.
    artifacts = [r for r in got if "artifactUpdate" in r.body]
    assert artifacts[0].body["artifactUpdate"]["artifact"]["parts"] == [
        {"text": "Your claim is filed."}
    ]
    assert all(
        r.body.get("statusUpdate", r.body.get("artifactUpdate"))["taskId"] == task_id for r in got
    )


@pytest.mark.parametrize("dialect", ["v0.3", "v1.0"])
def test_a_config_set_on_a_running_task_notifies_its_transitions(
    agent_url: str, configure: Any, fake_llm: FakeLLM, dialect: str
) -> None:
    configure(fake_llm, PUSH=ALLOW)
    fake_llm.push(Hang(max_seconds=20, then=EXPENSE), Text("Filed."))
    rpc = RpcClient(agent_url, V1 if dialect == "v1.0" else None)
    with Receiver() as hook:
        if dialect == "v0.3":
            sent = rpc.call(
                "message/send",
                {"message": v03_message("file an expense"), "configuration": {"blocking": False}},
            )
            task_id = sent["result"]["id"]
        else:
            sent = rpc.call(
                "SendMessage",
                {
                    "message": v1_message("file an expense"),
                    "configuration": {"returnImmediately": True},
                },
            )
            task_id = sent["result"]["task"]["id"]
        fake_llm.wait_held(1)
        if dialect == "v0.3":
            made = rpc.call(
                "tasks/pushNotificationConfig/set",
                {
                    "taskId": task_id,
                    "pushNotificationConfig": {"id": "mine", "url": hook.url, "token": "t3"},
                },
            )["result"]
            assert made == {
                "taskId": task_id,
                "pushNotificationConfig": {"id": "mine", "url": hook.url, "token": "t3"},
            }
        else:
            made = rpc.call(
                "CreateTaskPushNotificationConfig",
                {"taskId": task_id, "id": "mine", "url": hook.url, "token": "t3"},
            )["result"]
            assert made == {"taskId": task_id, "id": "mine", "url": hook.url, "token": "t3"}
        fake_llm.release()
        waiting, done = (
            ("input-required", "completed")
            if dialect == "v0.3"
            else ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED")
        )
        wait_state(hook, waiting)
        approve(task_id)
        wait_state(hook, done)
        got = list(hook.received)
    # From the config on: the Task waits, is answered, completes.
    assert distinct([r.state for r in got if r.state])[0] == waiting
    assert distinct([r.state for r in got if r.state])[-1] == done
    if dialect == "v0.3":
        # The v0.3 body is the Task as each event left it.
        assert distinct([r.state for r in got]) == ["input-required", "working", "completed"]
        assert all(r.body["id"] == task_id and r.body["kind"] == "task" for r in got)
    assert_in_order(got, "t3")


def test_get_list_delete_and_another_owner(
    agent_url: str, configure: Any, fake_llm: FakeLLM, users: Any
) -> None:
    configure(fake_llm, PUSH=ALLOW, **BASIC_ONLY)
    fake_llm.default = Hang(max_seconds=20, then=Text("done"))
    alice = RpcClient(agent_url, {**V1, **basic("alice")})
    bob = RpcClient(agent_url, {**V1, **basic("bob")})
    task_id = alice.call(
        "SendMessage",
        {"message": v1_message("a job"), "configuration": {"returnImmediately": True}},
    )["result"]["task"]["id"]
    made = alice.call(
        "CreateTaskPushNotificationConfig",
        {
            "taskId": task_id,
            "url": "http://127.0.0.1:9/a",
            "token": "x",
            "authentication": {"scheme": "Basic", "credentials": "dTpw"},
        },
    )["result"]
    # Credentials are write-only: the scheme comes back, never the secret.
    assert made["authentication"] == {"scheme": "Basic"} and made["id"]
    alice.call(
        "CreateTaskPushNotificationConfig",
        {"taskId": task_id, "id": "second", "url": "http://127.0.0.1:9/b"},
    )
    listed = alice.call("ListTaskPushNotificationConfigs", {"taskId": task_id})["result"]
    assert sorted(c["id"] for c in listed["configs"]) == sorted([made["id"], "second"])
    got = alice.call("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "second"})["result"]
    assert got["url"] == "http://127.0.0.1:9/b"
    stored = PushConfig.objects.get(task_id=task_id, config_id=made["id"])
    assert "dTpw" not in stored.credentials and stored.credentials  # encrypted at rest

    # Another owner: as if neither the Task nor its configs existed.
    for method, params in (
        ("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "second"}),
        ("ListTaskPushNotificationConfigs", {"taskId": task_id}),
        ("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "second"}),
        ("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": "http://127.0.0.1:9/c"}),
    ):
        assert bob.call(method, params)["error"]["code"] == -32001, method
    assert (
        alice.call("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "second"})[
            "result"
        ]
        == {}
    )
    gone = alice.call("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "second"})
    assert gone["error"]["code"] == -32001
    # v0.3 names and shapes on the same configs.
    v03 = RpcClient(agent_url, basic("alice"))
    assert [
        c["pushNotificationConfig"]["id"]
        for c in v03.call("tasks/pushNotificationConfig/list", {"id": task_id})["result"]
    ] == [made["id"]]
    assert (
        v03.call(
            "tasks/pushNotificationConfig/delete",
            {"id": task_id, "pushNotificationConfigId": made["id"]},
        )["result"]
        is None
    )
    fake_llm.release()


def test_rest_routes_for_configs(agent_url: str, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm, PUSH=ALLOW)
    fake_llm.default = Text("done")
    sent = http(
        agent_url + "message:send",
        data=b'{"message": {"messageId": "r1", "role": "ROLE_USER", "parts": [{"text": "x"}]}}',
        headers={"Content-Type": "application/json"},
    ).json
    task_id = sent["task"]["id"]
    base = f"{agent_url}tasks/{task_id}/pushNotificationConfigs"
    made = http(
        base,
        data=b'{"id": "c1", "url": "http://127.0.0.1:9/x"}',
        headers={"Content-Type": "application/json"},
    )
    assert made.status == 200 and made.json["id"] == "c1" and made.json["taskId"] == task_id
    assert [c["id"] for c in http(base).json["configs"]] == ["c1"]
    assert http(base + "/c1").json["url"] == "http://127.0.0.1:9/x"
    assert http(base + "/c1", method="DELETE").status == 200
    assert http(base + "/c1").status == 404
    refused = http(
        base, data=b'{"url": "http://10.0.0.1/"}', headers={"Content-Type": "application/json"}
    )
    assert refused.status == 400
    assert refused.json["error"]["details"][0]["metadata"]["reason"] == "PUSH_URL_REFUSED"


# -- retries, backoff, disabling ---------------------------------------------------------


def test_a_receiver_that_is_down_at_first_gets_everything_later_in_order(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, PUSH=ALLOW)
    fake_llm.default = Text("done")
    with Receiver() as hook:
        hook.answer(503, 503, 503)  # then 200s
        send_with_config(RpcClient(agent_url, V1), "notify me", {"url": hook.url, "token": "t"})
        wait_state(hook, "TASK_STATE_COMPLETED")
        got = list(hook.received)
    first = got[0].headers["x-a2a-event-id"]
    # The first notification was tried four times, then everything in order.
    assert [r.headers["x-a2a-event-id"] for r in got[:4]] == [first] * 4
    assert_in_order(got[3:], "t")
    retries = list(PushDelivery.objects.filter(outcome="retry").order_by("at"))
    assert [d.attempt for d in retries] == [1, 2, 3]
    waits = [(d.next_attempt_at - d.at).total_seconds() for d in retries]
    assert waits == sorted(waits) and waits[0] < waits[-1]  # each delay at least the last


def test_a_receiver_failing_for_ever_disables_the_config(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, PUSH={**ALLOW, "MAX_ATTEMPTS": 3})
    fake_llm.default = Text("done")
    with Receiver() as hook:
        hook.always(500)
        rpc = RpcClient(agent_url, V1)
        task_id = send_with_config(rpc, "notify me", {"url": hook.url})["result"]["task"]["id"]
        config = wait_until(
            lambda: PushConfig.objects.filter(task_id=task_id, disabled_at__isnull=False).first(),
            what="the config to be disabled",
        )
        assert len(hook.received) == 3
    assert "3 deliveries failed in a row" in config.disabled_reason
    assert "HTTP 500" in config.disabled_reason
    outcomes = list(
        PushDelivery.objects.filter(config=config).order_by("at").values_list("outcome", flat=True)
    )
    assert outcomes == ["retry", "retry", "disabled"]


def test_another_4xx_skips_that_notification_and_goes_on(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, PUSH=ALLOW)
    fake_llm.default = Text("done")
    with Receiver() as hook:
        hook.answer(410)
        send_with_config(RpcClient(agent_url, V1), "notify me", {"url": hook.url})
        got = wait_state(hook, "TASK_STATE_COMPLETED")
    assert got[0].headers["x-a2a-event-id"] != got[1].headers["x-a2a-event-id"]
    assert PushDelivery.objects.filter(outcome="gave-up", status_code=410).count() == 1


# -- SSRF ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://localhost/",  # a name that resolves to loopback
        "ftp://example.com/",
        "http://user:pw@example.com/",
    ],
)
def test_unsafe_urls_are_refused_when_set(
    agent_url: str, configure: Any, fake_llm: FakeLLM, url: str
) -> None:
    configure(fake_llm)  # nothing allowed
    fake_llm.default = Text("done")
    rpc = RpcClient(agent_url, V1)
    refused = send_with_config(rpc, "x", {"url": url})
    assert refused["error"]["code"] == -32602, refused
    assert refused["error"]["data"][0]["metadata"]["reason"] == "PUSH_URL_REFUSED"
    assert PushConfig.objects.count() == 0


def test_loopback_without_the_allowlist_is_never_called(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm)
    fake_llm.default = Text("done")
    with Receiver() as hook:
        rpc = RpcClient(agent_url, V1)
        task_id = rpc.call(
            "SendMessage",
            {"message": v1_message("x"), "configuration": {"returnImmediately": True}},
        )["result"]["task"]["id"]
        refused = rpc.call("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": hook.url})
        assert refused["error"]["code"] == -32602
        assert "loopback" in refused["error"]["message"]
        # The Task's run is over before a config may be made: no delivery of
        # its end while the URL is still allowed (CI once saw one, a race).
        rpc.wait(task_id, states=("TASK_STATE_COMPLETED",))
        # Allowed when set, then the allowlist goes: each delivery checks again.
        configure(fake_llm, PUSH=ALLOW)
        rpc.call("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": hook.url})
        config = wait_until(
            lambda: PushConfig.objects.filter(task_id=task_id, lease_owner="").first(),
            what="the config to be idle",
        )
        configure(fake_llm, PUSH={"ALLOWED_HOSTS": []})  # nothing allowed any more
        before = hook.connections
        PushConfig.objects.filter(pk=config.pk).update(delivered_seq=0)  # undelivered events
        # This delivery finds it, or one the sweep started just before.
        wait_until(
            lambda: (
                deliver(config.pk) == "disabled"
                or PushConfig.objects.filter(pk=config.pk, disabled_at__isnull=False).exists()
            ),
            what="a delivery to find the URL no longer allowed",
        )
        config.refresh_from_db()
        assert "no longer allowed" in config.disabled_reason
        assert hook.connections == before == 0


def test_a_redirect_is_not_followed(agent_url: str, configure: Any, fake_llm: FakeLLM) -> None:
    configure(fake_llm, PUSH=ALLOW)
    fake_llm.default = Text("done")
    with Receiver() as hook, Receiver("127.0.0.2") as inner:
        hook.always(302, {"Location": f"http://127.0.0.2:{inner.port}/stolen"})
        send_with_config(RpcClient(agent_url, V1), "x", {"url": hook.url})
        wait_until(
            lambda: PushDelivery.objects.filter(outcome="gave-up").count() >= 2, what="skips"
        )
        assert inner.connections == 0
    assert set(PushDelivery.objects.values_list("status_code", flat=True)) == {302}


def test_the_card_offers_push_notifications(agent_url: str, configure: Any) -> None:
    configure(None)
    card = http(agent_url + ".well-known/agent-card.json").json
    assert card["capabilities"]["pushNotifications"] is True
    configure(None, store="memory")  # the memory and file stores keep configs too
    card = http(agent_url + ".well-known/agent-card.json").json
    assert card["capabilities"]["pushNotifications"] is True
    configure(None, store="tests.stores.test_stores.DictStore")  # a custom store keeps none
    card = http(agent_url + ".well-known/agent-card.json").json
    assert card["capabilities"]["pushNotifications"] is False


# -- signed notifications ------------------------------------------------------------------


def verify(jws: str, keys: list[dict[str, Any]]) -> dict[str, Any]:
    """The claims of ``jws`` if one of ``keys`` signed it (as a receiver checks)."""
    import base64
    import json

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    def decode(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    head, claims, signature = jws.split(".")
    header = json.loads(decode(head))
    assert header["alg"] == "ES256"
    (jwk,) = [k for k in keys if k["kid"] == header["kid"]]
    public = ec.EllipticCurvePublicNumbers(
        int.from_bytes(decode(jwk["x"]), "big"),
        int.from_bytes(decode(jwk["y"]), "big"),
        ec.SECP256R1(),
    ).public_key()
    raw = decode(signature)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public.verify(der, f"{head}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))  # raises if forged
    return dict(json.loads(decode(claims)))


def test_signed_notifications_verify_against_the_published_key_set(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    import base64
    import hashlib
    import time

    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    configure(fake_llm, PUSH={**ALLOW, "SIGNING_KEY": pem, "ISSUER": "https://agent.example"})
    fake_llm.default = Text("done")
    keys = http(agent_url + ".well-known/jwks.json").json["keys"]
    assert [k["alg"] for k in keys] == ["ES256"] and "d" not in keys[0]  # public only
    with Receiver() as hook:
        task_id = send_with_config(RpcClient(agent_url, V1), "sign it", {"url": hook.url})[
            "result"
        ]["task"]["id"]
        got = wait_state(hook, "TASK_STATE_COMPLETED")
    for received in got:
        claims = verify(received.headers["x-a2a-notification-signature"], keys)
        digest = (
            base64.urlsafe_b64encode(hashlib.sha256(received.raw).digest()).rstrip(b"=").decode()
        )
        assert claims["request_body_sha256"] == digest  # bound to the very body
        assert (
            claims["taskId"] == task_id and claims["eventId"] == received.headers["x-a2a-event-id"]
        )
        assert claims["iss"] == "https://agent.example" and claims["exp"] > time.time()
    # A body changed on the way no longer matches; a forged signature fails.
    head, claims_part, signature = got[0].headers["x-a2a-notification-signature"].split(".")
    with pytest.raises(InvalidSignature):
        verify(f"{head}.{claims_part}.{signature[:-4]}AAAA", keys)
    # Not signing: an empty key set, no signature header.
    configure(fake_llm, PUSH=ALLOW)
    assert http(agent_url + ".well-known/jwks.json").json == {"keys": []}


# -- the memory and file stores keep configs beside the Task --------------------------------


@pytest.fixture(params=["memory", "file"])
def local_store(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    return "memory" if request.param == "memory" else f"file:{tmp_path / 'tasks'}"


def local_configs(task_id: str) -> dict[str, Any]:
    from toolnexus_django.push.local import LocalBook

    return LocalBook(get_task_store()).docs.read(task_id)["configs"]


def test_the_memory_and_file_stores_deliver_every_transition_in_order(
    agent_url: str, configure: Any, fake_llm: FakeLLM, local_store: str
) -> None:
    configure(fake_llm, store=local_store, PUSH=ALLOW)
    fake_llm.push(EXPENSE, Text("Your claim is filed."))
    rpc = RpcClient(agent_url, V1)
    with Receiver() as hook:
        task_id = send_with_config(
            rpc,
            "file an expense of 12.5 for a taxi",
            {"id": "c", "url": hook.url, "token": "tok-l"},
        )["result"]["task"]["id"]
        wait_state(hook, "TASK_STATE_INPUT_REQUIRED")
        approve(task_id)
        wait_state(hook, "TASK_STATE_COMPLETED")
        got = list(hook.received)
    assert distinct([r.state for r in got if r.state]) == [
        "TASK_STATE_WORKING",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ]
    assert_in_order(got, "tok-l")
    # The state beside the Task: the cursor at the last event, the log, the token sealed.
    config = wait_until(
        lambda: (c := local_configs(task_id)["c"])["lease_owner"] == "" and c, what="idle"
    )
    assert config["delivered_seq"] == lifecycle.read(get_task_store().get(task_id)).seq
    assert {a["outcome"] for a in config["log"]} == {"delivered"}
    assert "tok-l" not in str(config["token"])
    # get / list / delete on the same store.
    listed = rpc.call("ListTaskPushNotificationConfigs", {"taskId": task_id})["result"]
    assert [c["id"] for c in listed["configs"]] == ["c"]
    assert (
        rpc.call("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c"})["result"]["token"]
        == "tok-l"
    )
    assert (
        rpc.call("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "c"})["result"] == {}
    )
    assert (
        rpc.call("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c"})["error"]["code"]
        == -32001
    )


def test_the_memory_and_file_stores_retry_then_disable(
    agent_url: str, configure: Any, fake_llm: FakeLLM, local_store: str
) -> None:
    configure(fake_llm, store=local_store, PUSH={**ALLOW, "MAX_ATTEMPTS": 3})
    fake_llm.default = Text("done")
    with Receiver() as hook:
        hook.always(500)
        task_id = send_with_config(
            RpcClient(agent_url, V1), "notify me", {"id": "c", "url": hook.url}
        )["result"]["task"]["id"]
        config = wait_until(
            lambda: (c := local_configs(task_id)["c"])["disabled_at"] and c,
            what="the config to be disabled",
        )
        assert len(hook.received) == 3
    assert "3 deliveries failed in a row" in config["disabled_reason"]
    assert [a["outcome"] for a in config["log"]] == ["retry", "retry", "disabled"]
