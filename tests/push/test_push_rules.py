"""The rules behind push notifications, as fast unit specifications: which URLs
may be called (SSRF), how long a retry waits, credentials at rest, configs
on the wire, and the checks of TOOLNEXUS["PUSH"]."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus_django.a2a.dialects import Dialect
from toolnexus_django.a2a.jsonrpc import RpcError
from toolnexus_django.a2a.pushconfig import StoredPushConfig, parse_create, parse_ref, render
from toolnexus_django.checks import check_push
from toolnexus_django.push import secrets
from toolnexus_django.push.delivery import retry_delay
from toolnexus_django.push.ssrf import RefusedURL, check_url


def resolving(*addresses: str) -> Any:
    return lambda host, port: list(addresses)


# -- SSRF ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "addresses", "why"),
    [
        ("http://127.0.0.1/", (), "loopback"),
        ("http://[::1]:8080/", (), "loopback"),
        ("http://10.1.2.3/", (), "private"),
        ("http://172.16.0.9/", (), "private"),
        ("http://192.168.1.1/", (), "private"),
        ("http://[fc00::1]/", (), "private"),
        ("http://169.254.169.254/latest", (), "metadata"),
        ("http://[fe80::1]/", (), "link-local"),
        ("http://224.0.0.1/", (), "multicast"),
        ("http://0.0.0.0/", (), "unspecified"),
        ("http://100.64.0.1/", (), "shared"),
        ("http://[::ffff:127.0.0.1]/", (), "loopback"),
        ("http://hooks.example/", ("93.184.216.34", "127.0.0.1"), "loopback"),  # any address
        ("http://rebind.example/", ("10.0.0.5",), "private"),
        ("http://metadata.google.internal/", ("8.8.8.8",), "metadata"),
        ("ftp://hooks.example/", ("93.184.216.34",), "http and https"),
        ("http://u:p@hooks.example/", ("93.184.216.34",), "credentials"),
        ("http:///nohost", (), "no host"),
    ],
)
def test_unsafe_urls_are_refused_with_the_reason(
    url: str, addresses: tuple[str, ...], why: str
) -> None:
    with pytest.raises(RefusedURL, match=why):
        check_url(url, resolver=resolving(*addresses))


def test_a_public_url_is_called_at_the_address_that_was_checked() -> None:
    target = check_url("https://hooks.example:8443/a2a?x=1", resolver=resolving("93.184.216.34"))
    assert (target.scheme, target.host, target.port, target.path) == (
        "https",
        "hooks.example",
        8443,
        "/a2a?x=1",
    )
    assert target.address == "93.184.216.34"


def test_the_allowlist_admits_a_host_by_name_suffix_or_address() -> None:
    loopback = resolving("127.0.0.1")
    assert check_url("http://receiver.local/", ["receiver.local"], loopback).address == "127.0.0.1"
    assert check_url("http://a.internal.example/", [".internal.example"], loopback)
    assert check_url("http://127.0.0.1:9000/", ["127.0.0.1"]).port == 9000
    with pytest.raises(RefusedURL):
        check_url("http://other.local/", ["receiver.local"], loopback)
    # Metadata addresses stay refused even for an allowed host.
    with pytest.raises(RefusedURL, match="metadata"):
        check_url("http://receiver.local/", ["receiver.local"], resolving("169.254.169.254"))


def test_a_name_that_does_not_resolve_is_refused() -> None:
    def nowhere(host: str, port: int) -> list[str]:
        raise OSError("Name or service not known")

    with pytest.raises(RefusedURL, match="does not resolve"):
        check_url("http://nowhere.example/", resolver=nowhere)


# -- retries --------------------------------------------------------------------------------


def test_each_retry_waits_at_least_as_long_as_the_one_before(settings: Any) -> None:
    settings.TOOLNEXUS = {
        **settings.TOOLNEXUS,
        "PUSH": {"RETRY_DELAY": 1.0, "MAX_RETRY_DELAY": 60.0},
    }
    for _ in range(50):
        delays = [retry_delay(n) for n in range(1, 9)]
        # Doubling with jitter in [1/2, 1]: attempt n waits in [2^(n-2), 2^(n-1)].
        assert all(2 ** (n - 2) <= d <= 2 ** (n - 1) for n, d in enumerate(delays[:6], start=1))
        assert delays[:6] == sorted(delays[:6])
        assert max(delays) <= 60.0
    assert retry_delay(1, retry_after=30) >= 30  # Retry-After is honoured
    assert retry_delay(1, retry_after=10**9) <= 3600  # within reason


# -- credentials at rest ------------------------------------------------------------------


def test_credentials_are_sealed_and_survive_a_key_rotation(settings: Any) -> None:
    sealed = secrets.seal("s3cret")
    assert "s3cret" not in sealed and secrets.unseal(sealed) == "s3cret"
    old = settings.SECRET_KEY
    settings.SECRET_KEY = "a-new-secret-key-for-this-test"
    assert secrets.unseal(sealed) == ""  # the new key alone cannot open it
    settings.SECRET_KEY_FALLBACKS = [old]
    assert secrets.unseal(sealed) == "s3cret"
    assert secrets.seal("") == "" and secrets.unseal("") == ""


# -- configs on the wire ------------------------------------------------------------------


def test_configs_parse_and_render_per_dialect() -> None:
    task_id, spec = parse_create(
        {
            "taskId": "t",
            "pushNotificationConfig": {
                "id": "c",
                "url": "https://h/x",
                "token": "tok",
                "authentication": {"schemes": ["bearer"], "credentials": "k"},
            },
        },
        Dialect.V03,
    )
    assert (task_id, spec.config_id, spec.scheme, spec.credentials) == ("t", "c", "Bearer", "k")
    _, v1 = parse_create(
        {
            "taskId": "t",
            "url": "https://h/x",
            "authentication": {"scheme": "Basic", "credentials": "u:p"},
        },
        Dialect.V10,
    )
    assert (v1.scheme, v1.credentials, v1.config_id) == ("Basic", "u:p", None)
    stored = StoredPushConfig("t", "c", "https://h/x", "tok", "Bearer", "1.0")
    assert render(stored, Dialect.V10) == {
        "taskId": "t",
        "id": "c",
        "url": "https://h/x",
        "token": "tok",
        "authentication": {"scheme": "Bearer"},  # never the credentials
    }
    assert render(stored, Dialect.V03)["pushNotificationConfig"]["authentication"] == {
        "schemes": ["Bearer"]
    }
    assert parse_ref({"id": "t", "pushNotificationConfigId": "c"}, Dialect.V03, need_id=True) == (
        "t",
        "c",
    )


@pytest.mark.parametrize(
    "params",
    [
        {"taskId": "t"},  # no url
        {"taskId": "t", "url": 42},
        {"taskId": "t", "url": "https://h/", "authentication": {"scheme": "Digest"}},
        {"taskId": "t", "url": "https://h/", "authentication": "Bearer"},
        {"taskId": "t", "url": "https://h/", "token": "x" * 5000},
        {"url": "https://h/"},  # no task
    ],
)
def test_bad_configs_are_invalid_params(params: dict[str, Any]) -> None:
    with pytest.raises(RpcError) as refused:
        parse_create(params, Dialect.V10)
    assert refused.value.code == -32602


# -- checks ---------------------------------------------------------------------------------


def test_push_settings_are_checked(settings: Any) -> None:
    def ids(**push: Any) -> set[str]:
        settings.TOOLNEXUS = {**settings.TOOLNEXUS, "PUSH": push}
        return {m.id for m in check_push()}  # type: ignore[misc]

    assert ids(ALLOWED_HOSTS=["127.0.0.1"]) == set()
    assert ids(ALOWED_HOSTS=[]) == {"toolnexus_django.E601"}
    assert ids(ALLOWED_HOSTS="127.0.0.1") == {"toolnexus_django.E602"}
    assert ids(ALLOWED_HOSTS=["*", ".svc.local", "[::1]", "0x7f.1", "hooks"]) == set()
    assert ids(ALLOWED_HOSTS=["hooks internal"]) == {"toolnexus_django.E603"}  # no host
    assert ids(ALLOWED_HOSTS=["169.254.169.254"]) == {"toolnexus_django.W030"}  # stays refused
    assert ids(ALLOWED_HOSTS=["metadata.google.internal"]) == {"toolnexus_django.W030"}
    assert ids(TIMEOUT=0) == {"toolnexus_django.E604"}
    assert ids(MAX_ATTEMPTS=0) == {"toolnexus_django.E607"}
