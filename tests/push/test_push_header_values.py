"""A push config's token and credentials become headers of every
notification, so they are checked as header-safe when the config is made —
in every dialect and binding (tests/corpus/push_headers.py) — and a config
stored before that rule, which can never be sent, is disabled with its reason
in one log line, while the delivery loop goes on delivering the others."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest

from tests.conftest import RpcClient, http, wait_until
from tests.corpus.push_headers import FINE, HOSTILE
from tests.fakes import FakeLLM, Hang, Text
from tests.webhooks import Receiver
from toolnexus_django.a2a.dialects import Dialect
from toolnexus_django.a2a.jsonrpc import RpcError
from toolnexus_django.a2a.pushconfig import parse_create, parse_spec
from toolnexus_django.models import PushConfig, TaskRecord
from toolnexus_django.push import secrets, sender
from toolnexus_django.push.ssrf import Target
from toolnexus_django.stores import get_task_store

V1 = {"A2A-Version": "1.0"}
ALLOW = {"ALLOWED_HOSTS": ["127.0.0.1"], "RETRY_DELAY": 0.1, "MAX_ATTEMPTS": 3}
FIELDS = ("token", "authentication.credentials")


def v1_config(field: str, value: str, url: str = "http://127.0.0.1:9/hook") -> dict[str, Any]:
    if field == "token":
        return {"url": url, "token": value}
    return {"url": url, "authentication": {"scheme": "Bearer", "credentials": value}}


def v03_config(field: str, value: str, url: str = "http://127.0.0.1:9/hook") -> dict[str, Any]:
    if field == "token":
        return {"url": url, "token": value}
    return {"url": url, "authentication": {"schemes": ["Bearer"], "credentials": value}}


# -- the rule, as the wire parses it -------------------------------------------------------


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize(("what", "value"), HOSTILE, ids=[w for w, _ in HOSTILE])
def test_a_value_that_is_not_header_safe_is_invalid_params_naming_it(
    field: str, what: str, value: str
) -> None:
    forms = {
        "v1.0 Create": lambda: parse_create(
            {"taskId": "t", **v1_config(field, value)}, Dialect.V10
        ),
        "v0.3 set": lambda: parse_create(
            {"taskId": "t", "pushNotificationConfig": v03_config(field, value)}, Dialect.V03
        ),
        "v1.0 inline": lambda: parse_spec(v1_config(field, value), Dialect.V10),
        "v0.3 inline": lambda: parse_spec(v03_config(field, value), Dialect.V03),
    }
    for form, parse in forms.items():
        with pytest.raises(RpcError) as refused:
            parse()
        assert refused.value.code == -32602, form
        assert f"{field} is sent in a header" in refused.value.message, form
        assert value not in refused.value.message  # never echoed


@pytest.mark.parametrize("value", FINE)
def test_header_safe_values_are_kept_as_they_are(value: str) -> None:
    _, spec = parse_create({"taskId": "t", **v1_config("token", value)}, Dialect.V10)
    assert spec.token == value
    spec = parse_spec(v03_config("authentication.credentials", value), Dialect.V03)
    assert spec.credentials == value


def test_the_sender_never_sends_nor_quotes_an_unsafe_value() -> None:
    # Port 9 on 127.0.0.1: nothing listens; no connection is even tried.
    target = Target("http://127.0.0.1:9/", "http", "127.0.0.1", 9, "/", "127.0.0.1")
    reply = sender.post(target, b"{}", {"X-A2A-Notification-Token": "s3cret\r\nX: 1"}, 1.0)
    assert reply.unsendable and not reply.retryable and reply.status is None
    assert "X-A2A-Notification-Token header cannot be sent" in reply.error
    assert "s3cret" not in reply.error


# -- over the wire: every dialect and binding refuses at creation ---------------------------


def test_every_dialect_and_binding_refuses_unsafe_credentials(
    agent_url: str, configure: Any, fake_llm: FakeLLM
) -> None:
    configure(fake_llm, PUSH=ALLOW)
    fake_llm.default = Hang(max_seconds=20, then=Text("done"))
    v1, v03 = RpcClient(agent_url, V1), RpcClient(agent_url)
    message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}
    task_id = v1.call(
        "SendMessage", {"message": message, "configuration": {"returnImmediately": True}}
    )["result"]["task"]["id"]
    tasks = TaskRecord.objects.count()

    def v03_message() -> dict[str, Any]:
        parts = [{"kind": "text", "text": "x"}]
        return {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user", "parts": parts}

    def rest(path: str, body: dict[str, Any]) -> tuple[int, str]:
        reply = http(
            agent_url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", **V1},
        )
        return reply.status, reply.json["error"]["message"]

    def rpc(client: RpcClient, method: str, params: dict[str, Any]) -> tuple[int, str]:
        error = client.call(method, params)["error"]
        return error["code"], error["message"]

    routes = {
        "v1.0 CreateTaskPushNotificationConfig": lambda f, v: rpc(
            v1, "CreateTaskPushNotificationConfig", {"taskId": task_id, **v1_config(f, v)}
        ),
        "v1.0 SendMessage inline": lambda f, v: rpc(
            v1,
            "SendMessage",
            {
                "message": {**message, "messageId": str(uuid.uuid4())},
                "configuration": {"taskPushNotificationConfig": v1_config(f, v)},
            },
        ),
        "v0.3 tasks/pushNotificationConfig/set": lambda f, v: rpc(
            v03,
            "tasks/pushNotificationConfig/set",
            {"taskId": task_id, "pushNotificationConfig": v03_config(f, v)},
        ),
        "v0.3 message/send inline": lambda f, v: rpc(
            v03,
            "message/send",
            {
                "message": v03_message(),
                "configuration": {"blocking": False, "pushNotificationConfig": v03_config(f, v)},
            },
        ),
        "HTTP+JSON POST pushNotificationConfigs": lambda f, v: rest(
            f"tasks/{task_id}/pushNotificationConfigs", v1_config(f, v)
        ),
        "HTTP+JSON message:send inline": lambda f, v: rest(
            "message:send",
            {
                "message": {**message, "messageId": str(uuid.uuid4())},
                "configuration": {"taskPushNotificationConfig": v1_config(f, v)},
            },
        ),
    }
    for route, make in routes.items():
        expected = 400 if route.startswith("HTTP+JSON") else -32602
        for field in FIELDS:
            for what, value in HOSTILE:
                code, text = make(field, value)
                assert code == expected, (route, field, what, text)
                assert f"{field} is sent in a header" in text, (route, field, what, text)
    # Nothing was stored, and no send made a Task.
    assert PushConfig.objects.count() == 0
    assert TaskRecord.objects.count() == tasks
    fake_llm.release()


# -- a config stored before the rule --------------------------------------------------------


@pytest.fixture(params=["django", "memory"])
def store(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def store_bad_values(task_id: str, store: str, bad: dict[str, dict[str, str]]) -> None:
    """Write hostile values straight into the stored configs (sealed, as
    creation stores them), as a config made before the rule would be."""
    sealed = {cid: {k: secrets.seal(v) for k, v in values.items()} for cid, values in bad.items()}
    if store == "django":
        for config_id, values in sealed.items():
            PushConfig.objects.filter(task_id=task_id, config_id=config_id).update(**values)
        return
    from toolnexus_django.push.local import LocalBook

    docs = LocalBook(get_task_store()).docs
    with docs.locked():
        doc = docs.read(task_id)
        for config_id, values in sealed.items():
            doc["configs"][config_id].update(values)
        docs.write(task_id, doc)


def disabled_reason(task_id: str, config_id: str, store: str) -> str | None:
    if store == "django":
        row = PushConfig.objects.filter(task_id=task_id, config_id=config_id).first()
        return row.disabled_reason if row is not None and row.disabled_at else None
    from toolnexus_django.push.local import LocalBook

    config = LocalBook(get_task_store()).docs.read(task_id)["configs"][config_id]
    return str(config["disabled_reason"]) if config.get("disabled_at") else None


def test_a_stored_config_that_can_never_be_sent_is_disabled_and_the_others_deliver(
    agent_url: str,
    configure: Any,
    fake_llm: FakeLLM,
    store: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    configure(fake_llm, store=store, PUSH=ALLOW)
    fake_llm.default = Hang(max_seconds=20, then=Text("done"))
    caplog.set_level(logging.INFO, logger="toolnexus_django.push")
    rpc = RpcClient(agent_url, V1)
    with Receiver() as hook:
        message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}
        task_id = rpc.call(
            "SendMessage", {"message": message, "configuration": {"returnImmediately": True}}
        )["result"]["task"]["id"]
        fake_llm.wait_held(1)
        for config_id in ("good", "bad-token", "bad-credentials"):
            made = rpc.call(
                "CreateTaskPushNotificationConfig",
                {
                    "taskId": task_id,
                    "id": config_id,
                    "url": f"{hook.url}/{config_id}",
                    "token": "t",
                    "authentication": {"scheme": "Bearer", "credentials": "k"},
                },
            )
            assert "result" in made, made
        store_bad_values(
            task_id,
            store,
            {
                "bad-token": {"token": "s3cret\r\nX-Injected: 1"},
                "bad-credentials": {"credentials": "\u043a\u043b\u044e\u0447"},
            },
        )
        fake_llm.release()  # the Task works, then completes: events to deliver
        reasons = wait_until(
            lambda: (
                all(disabled_reason(task_id, c, store) for c in ("bad-token", "bad-credentials"))
                and [disabled_reason(task_id, c, store) for c in ("bad-token", "bad-credentials")]
            ),
            what="both configs that can never be sent to be disabled",
        )
        got = wait_until(
            lambda: (
                [r for r in hook.received if r.state == "TASK_STATE_COMPLETED"]
                and list(hook.received)
            ),
            what="the good config's notifications, up to completed",
        )
    assert {r.path for r in got} == {"/hook/good"}  # the others never sent anything
    assert all(r.headers["x-a2a-notification-token"] == "t" for r in got)
    assert "X-A2A-Notification-Token header cannot be sent" in reasons[0]
    assert "Authorization header cannot be sent" in reasons[1]
    assert not any("s3cret" in r or "\u043a" in r for r in reasons)  # never quoted
    assert disabled_reason(task_id, "good", store) is None
    # One line each, no traceback: the loop handled it as a failure of that config.
    push_logs = [r for r in caplog.records if r.name == "toolnexus_django.push"]
    assert not [r for r in push_logs if r.exc_info], [r.getMessage() for r in push_logs]
    for config_id in ("bad-token", "bad-credentials"):
        lines = [r.getMessage() for r in push_logs if config_id in r.getMessage()]
        assert len(lines) == 1 and "disabled:" in lines[0], lines
