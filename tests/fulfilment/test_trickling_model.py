"""A model that trickles its answer ends at the run's time, not its own.

Issue 29, item 5: a model server answered 200, then one byte every half
second; its Task was still ``working`` at 244 s with ``timeout_ms`` at
120 s, for each socket read had its timeout and none was ever silent that
long. The default transport now bounds the whole call — connect, TLS,
headers, body, a stream — on every path (kept connections, urllib's for a
proxy, streaming), cuts its connection, and raises a ``TimeoutError`` that
toolnexus reads as its own ``timeout_ms`` passing. The model is the fake
over real sockets (``Trickle``: headers, then a byte every 0.2 s).
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.conftest import wait_until
from tests.fakes import FakeLLM, Text, Trickle
from toolnexus_django.agent import transport as transport_module
from toolnexus_django.agent.deadline import (
    WATCHDOG,
    AbandonedCall,
    CallDeadline,
    ModelCallTimeout,
    watched_opener,
)
from toolnexus_django.agent.transport import BoundedTransport, BudgetedTransport
from toolnexus_django.runtime.threads import RunBudget, within_budget
from toolnexus_django.testing import run_task

HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer k"}
PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
#: How long each trickle goes on (far past every deadline here), a deadline,
#: and how often a byte comes (several per deadline: each read gets one in time).
TRICKLE_SECONDS = 15
DEADLINE = 0.3
EVERY = 0.05


def chat_url(fake: FakeLLM) -> str:
    return f"{fake.url}/chat/completions"


@pytest.fixture
def via_proxy(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The environment names a proxy for http (the fake itself, which reads
    the absolute URL a proxy is sent): model calls take urllib's path."""
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{fake_llm.port}")
    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    transport_module._proxies.cache_clear()
    watched_opener.cache_clear()
    assert not transport_module.KeptConnections.direct(chat_url(fake_llm))
    yield
    transport_module._proxies.cache_clear()
    watched_opener.cache_clear()


def call(transport: Any, path: str, url: str, timeout: float) -> Any:
    """One model call the way toolnexus makes it: ``post``, or ``open`` and
    read the stream to its end (then close it, as toolnexus does)."""
    if path != "stream":
        return transport.post(url, HEADERS, PAYLOAD, timeout)
    with transport.open(url, HEADERS, PAYLOAD, timeout) as streamed:
        while streamed.read1(8192):
            pass
    return None


def hung_up(fake: FakeLLM, n: int = 1) -> None:
    """The client closed the trickling connection (it was not kept, nor left reading)."""
    wait_until(lambda: fake.hung_up >= n, timeout=10, what="the client to hang up")


# -- the transport, over a real socket ----------------------------------------------


@pytest.mark.parametrize("slow", ["body", "headers"])
@pytest.mark.parametrize("path", ["kept", "urllib", "stream"])
def test_a_trickled_answer_ends_the_call_at_its_timeout(
    fake_llm: FakeLLM, request: pytest.FixtureRequest, path: str, slow: str
) -> None:
    if path == "urllib":
        request.getfixturevalue("via_proxy")
    fake_llm.push(Trickle(EVERY, headers=slow == "headers", max_seconds=TRICKLE_SECONDS))
    transport = BoundedTransport(1 << 20)
    with pytest.raises(ModelCallTimeout, match="did not answer within"):
        call(transport, path, chat_url(fake_llm), DEADLINE)
    hung_up(fake_llm)
    # The next call, to a model that answers, is served (on a new connection).
    fake_llm.push(Text("fine"))
    answer = transport.post(chat_url(fake_llm), HEADERS, PAYLOAD, 5)
    assert answer["choices"][0]["message"]["content"] == "fine"


def test_a_run_timeout_shorter_than_the_calls_ends_it(fake_llm: FakeLLM) -> None:
    """``BudgetedTransport``: the call's timeout clamped to the run's time
    left (RUN_TIMEOUT) bounds the whole call too."""
    fake_llm.push(Trickle(EVERY, max_seconds=TRICKLE_SECONDS))
    transport = BudgetedTransport(BoundedTransport(1 << 20))
    with within_budget(RunBudget(DEADLINE)), pytest.raises(TimeoutError):
        transport.post(chat_url(fake_llm), HEADERS, PAYLOAD, 120.0)
    hung_up(fake_llm)


def test_a_canceled_runs_trickling_call_ends_at_once(fake_llm: FakeLLM) -> None:
    """A run abandoned (canceled) mid-call cuts the call: its IO thread is free."""
    fake_llm.push(Trickle(EVERY, max_seconds=TRICKLE_SECONDS))
    transport = BudgetedTransport(BoundedTransport(1 << 20))
    budget = RunBudget(None)
    outcome: list[BaseException] = []

    def model_call() -> None:
        with within_budget(budget):
            try:
                transport.post(chat_url(fake_llm), HEADERS, PAYLOAD, 120.0)
            except BaseException as exc:
                outcome.append(exc)

    caller = threading.Thread(target=model_call, daemon=True)
    caller.start()
    fake_llm.wait_for_requests(1)
    budget.abandon()
    caller.join(10)
    assert not caller.is_alive(), "the call went on after its run was canceled"
    assert len(outcome) == 1 and isinstance(outcome[0], AbandonedCall), outcome
    hung_up(fake_llm)


def self_signed(where: Path) -> tuple[Path, Path]:
    """A certificate (and its key) for 127.0.0.1, written under ``where``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = where / "cert.pem", where / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.fixture
def trickling_over_tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An https model (a certificate for 127.0.0.1 the client trusts) that
    answers its headers, then the body a byte every 0.2 s."""
    cert_file, key_file = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # what the client trusts
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        try:
            conn, _ = listener.accept()
            with context.wrap_socket(conn, server_side=True) as tls:
                received = b"-"
                while received and b"\r\n\r\n" not in received:
                    received += tls.recv(65536)
                body = b'{"choices": [{"message": {"role": "assistant", "content": "late"}}]}'
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n"
                tls.sendall(head.encode())
                for i in range(len(body)):
                    if stop.wait(0.2):
                        return
                    tls.sendall(body[i : i + 1])
        except OSError:
            pass  # the client hung up

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    yield f"https://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions"
    stop.set()
    listener.close()
    server.join(5)


def test_a_trickled_answer_over_tls_ends_the_call_at_its_timeout(trickling_over_tls: str) -> None:
    with pytest.raises(ModelCallTimeout):
        BoundedTransport(1 << 20).post(trickling_over_tls, HEADERS, PAYLOAD, DEADLINE)


def test_deadlines_that_finish_in_time_do_not_pile_up() -> None:
    before = len(WATCHDOG)
    for _ in range(2000):
        deadline = CallDeadline(300)
        assert deadline.finish()
    assert len(WATCHDOG) - before < 200


# -- a run, end to end --------------------------------------------------------------


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> FakeLLM:
    return request.getfixturevalue(request.param)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("fake", ["fake_llm", "fake_anthropic"], indirect=True)
def test_a_trickling_model_fails_the_task_at_timeout_ms(configure: Any, fake: FakeLLM) -> None:
    """With retries on: toolnexus reads the timeout as its own (RunTimeout),
    not retried; the Task says it in words; the next Task is served."""
    client = configure(fake)["CLIENT"]
    configure(fake, client={**client, "timeout_ms": 400, "retries": 2})
    fake.on("trickle marker", Trickle(EVERY, max_seconds=TRICKLE_SECONDS))

    failed = run_task("trickle marker: file my receipt")
    assert (failed.state, failed.text) == ("failed", "The model did not answer in time")
    assert failed.cause is not None and failed.cause.startswith("RunTimeout"), failed.cause
    assert len(fake.requests_for("trickle marker")) == 1, "a timeout is not retried"
    hung_up(fake)

    fake.on("healthy marker", Text("healthy"))
    done = run_task("healthy marker: answer at once")
    assert (done.state, done.text) == ("completed", "healthy")


@pytest.mark.django_db(transaction=True)
def test_a_trickling_model_is_cut_off_at_run_timeout(configure: Any, fake_llm: FakeLLM) -> None:
    """RUN_TIMEOUT sooner than timeout_ms: the run fails at it, and its model
    call does not go on trickling on an IO thread."""
    client = configure(fake_llm)["CLIENT"]
    configure(fake_llm, client={**client, "timeout_ms": 120_000}, RUN_TIMEOUT=1)
    fake_llm.on("trickle marker", Trickle(EVERY, max_seconds=TRICKLE_SECONDS))

    failed = run_task("trickle marker: file my receipt")
    assert (failed.state, failed.text) == ("failed", "The run took longer than RUN_TIMEOUT (1s)")
    hung_up(fake_llm)
