"""Streams across machines survive outages (issue 31): two ``toolnexus_serve``
instances on one PostgreSQL -- a throwaway cluster of this module's own
(tests/pgcluster.py; each test a database of its own on it), never the
shared server, which other test processes use -- with wake-ups by
LISTEN/NOTIFY (one listener per server process) and both polls 30 s apart,
so only a notification (or a listener's catch-up beat when it reconnects)
can bring a move to a stream within its deadline.

Each client follows a Task over SSE (v1.0 SubscribeToTask) on a server
other than the process that runs it, from ``Last-Event-ID: 0`` (so it must
receive the Task's whole event log), and reconnects with the last id it got
whenever its stream is cut, as a client would. What all of a Task's
connections delivered together must be exactly its stored events (no gap,
no duplicate), ending with the final one.

- A PostgreSQL restart (stop, start) in the middle of 100 Tasks split
  between the servers, each run by the server it was sent to and followed
  on the other: half of them finish their model call while the database is
  down, the rest once both listeners are back; a fifth of the clients drop
  their connection during the outage and resume.
- kill -9 of a whole server with streams open on it (its clients resume on
  the other one), and of a db_worker mid-run (toolnexus_serve's sweep
  requeues the Task once its lease lapses; another worker runs it once).

Independent of the suite's database (nothing here touches it): marked
``once``, so it runs in CI's SQLite run only; on PostgreSQL it would repeat
exactly.
"""

from __future__ import annotations

import re
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests import pgcluster
from tests.conftest import RpcClient, wait_until
from tests.fakes import FakeLLM, Hang, Reply, Text, first_user_text
from tests.servers import Served, fake_env, kill_group, migrate, serve
from tests.sse import open_stream
from tests.workers import db_workers
from toolnexus_django.a2a.dialects import STATE_TO_V1
from toolnexus_django.lifecycle.states import UNSEEN

pytestmark = [
    pytest.mark.slow,
    pytest.mark.once,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; POSIX signals"),
]

V1 = {"A2A-Version": "1.0"}
#: Both polls, and an idle stream's re-read: longer than any test here waits for a move.
POLL = "30"
#: The longest any wait here may take.
DEADLINE = 15.0
#: How often an idle stream re-reads the store (the servers' STREAM_HEARTBEAT).
HEARTBEAT = float(POLL)
FINAL = {STATE_TO_V1[s] for s in ("completed", "failed", "canceled", "rejected")}


#: A stored event: (seq, kind, to_state, public).
Stored = tuple[int, str, str, dict[str, Any]]


# -- the cluster -----------------------------------------------------------------------------


@dataclass
class Cluster:
    """Database ``name`` of a throwaway PostgreSQL cluster, with the app's tables."""

    pg: pgcluster.PgCluster
    name: str

    @property
    def url(self) -> str:
        return self.pg.url(self.name)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            return conn.execute(sql, params).fetchall()

    def events(self, task_ids: list[str]) -> dict[str, list[Stored]]:
        """Each Task's stored events, oldest first."""
        found: dict[str, list[Stored]] = {t: [] for t in task_ids}
        rows = self.query(
            "SELECT task_id, seq, kind, to_state, public FROM toolnexus_django_taskevent "
            "WHERE task_id = ANY(%s) ORDER BY task_id, seq",
            task_ids,
        )
        for task_id, seq, kind, to_state, public in rows:
            found[task_id].append((seq, kind, to_state, public))
        return found

    def tasks(self, task_ids: list[str]) -> dict[str, tuple[str, int, int, str]]:
        """Each Task's (state, attempts, event_seq, the worker that ran it last)."""
        rows = self.query(
            "SELECT id, state, attempts, event_seq, private->>'worker' "
            "FROM toolnexus_django_taskrecord WHERE id = ANY(%s)",
            task_ids,
        )
        return {t: (state, attempts, seq, worker) for t, state, attempts, seq, worker in rows}

    def runner(self, task_id: str) -> int:
        """The pid of the process holding ``task_id``'s lease now."""
        [(owner,)] = self.query(
            "SELECT lease_owner FROM toolnexus_django_taskrecord WHERE id = %s", task_id
        )
        assert owner, f"Task {task_id} is leased to nobody"
        return int(owner.rsplit(":", 1)[1])


#: The migrated database each test's database is copied from.
TEMPLATE = "toolnexus_template"


@pytest.fixture(scope="module")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pgcluster.PgCluster]:
    """This module's cluster (migrated once), stopped and deleted after its last test."""
    if reason := pgcluster.unavailable():
        pytest.skip(reason)
    with pgcluster.pg_cluster() as cluster:
        cluster.psql(f"CREATE DATABASE {TEMPLATE}")
        migrate(cluster.url(TEMPLATE), tmp_path_factory.mktemp("outages") / "migrate.log")
        yield cluster


@pytest.fixture
def cluster(pg: pgcluster.PgCluster) -> Cluster:
    """A database of the test's own on the module's cluster, its tables made."""
    if not pg.ready():  # a test that failed mid-outage left it stopped
        pg.start()
    name = f"outage_{uuid.uuid4().hex[:12]}"
    pg.psql(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    return Cluster(pg, name)


# -- following a Task ------------------------------------------------------------------------


def seen(event: dict[str, Any]) -> tuple[str, str]:
    """An SSE event's id and what it says: a v1.0 state, or ``artifact``."""
    result = event["data"]["result"]
    if "statusUpdate" in result:
        return event["id"], result["statusUpdate"]["status"]["state"]
    assert "artifactUpdate" in result, result
    return event["id"], "artifact"


def stored(events: list[Stored]) -> list[tuple[str, str]]:
    """What a stream from ``Last-Event-ID: 0`` must send for these stored
    events (a/follow.py's ids: ``<seq>`` for a status, ``<seq-1>.<k>`` for the
    k-th artifact its move added; a reviewer's move sends nothing)."""
    out = []
    for seq, kind, to_state, public in events:
        if kind in UNSEEN:
            continue
        added = len(public.get("artifacts") or ())
        out += [(f"{seq - 1}.{k}", "artifact") for k in range(1, added + 1)]
        out.append((str(seq), STATE_TO_V1[to_state]))
    return out


@dataclass
class Follower:
    """A client following one Task: it connects to ``urls[n]`` for its n-th
    connection (the last one thereafter: where a load balancer sends it
    once a server is gone), from ``Last-Event-ID: 0``, then from the last id
    it received, until a final event arrives or its deadline passes."""

    task_id: str
    urls: list[str]
    deadline: float
    got: list[tuple[str, str]] = field(default_factory=list)
    #: Why each connection before the last ended without the final event.
    cuts: list[str] = field(default_factory=list)
    connections: int = 0
    #: Keep-alive comments received (see assert_woken).
    keepalives: int = 0
    #: The longest wait for an event on one connection, in seconds.
    longest: float = 0.0
    failed: BaseException | None = None
    _socket: socket.socket | None = None
    _abandoned: bool = False

    @property
    def ended(self) -> bool:
        return bool(self.got) and self.got[-1][1] in FINAL

    def run(self) -> None:
        try:
            wait_until(
                self._connection,
                timeout=max(0.0, self.deadline - time.monotonic()),
                interval=0.2,
                what=f"the final event of {self.task_id}",
            )
        except BaseException as e:  # said by the test's thread
            self.failed = AssertionError(f"{e}: got {self.got}, cuts {self.cuts}")

    def hang_up(self) -> None:
        """The client's connection drops (a network blip): the read in
        progress fails at once, and the client reconnects."""
        sock = self._socket
        assert sock is not None, f"{self.task_id}: no connection to drop"
        sock.shutdown(socket.SHUT_RDWR)

    def abandon(self) -> None:
        """The test failed: stop following now (not at the deadline)."""
        self._abandoned = True
        sock = self._socket
        if sock is not None:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _connection(self) -> bool:
        """One connection: True once the final event came."""
        if self._abandoned:
            raise AssertionError("abandoned: the test failed")
        url = self.urls[min(self.connections, len(self.urls) - 1)]
        self.connections += 1
        headers = {**V1, "Last-Event-ID": self.got[-1][0] if self.got else "0"}
        since = time.monotonic()
        stream = None
        try:
            params = {"id": self.task_id}
            left = self.deadline - since
            with open_stream(
                url, "SubscribeToTask", params, headers=headers, timeout=left
            ) as stream:
                self._socket = stream.response.extensions["network_stream"].get_extra_info("socket")
                while (event := stream.next()) is not None:
                    if event["event"] == "error":
                        self.cuts.append(f"event: error {event['data']}")
                        return False
                    self.got.append(seen(event))
                    self.longest = max(self.longest, time.monotonic() - since)
                    since = time.monotonic()
                    if self.ended:
                        return True
            self.cuts.append("the stream ended without its final event")
        except (httpx.HTTPError, OSError) as e:
            self.cuts.append(repr(e))
        finally:
            self._socket = None
            self.keepalives += stream.comments if stream is not None else 0
        return False


@contextmanager
def following(followers: list[Follower]) -> Iterator[list[Follower]]:
    """Each follower on a thread of its own; joined at the end (each ends by
    its deadline), and failed there if any did not get its final event."""
    threads = [threading.Thread(target=f.run, name=f"follow-{f.task_id}") for f in followers]
    for thread in threads:
        thread.start()
    try:
        yield followers
    except BaseException:
        for follower in followers:
            follower.abandon()
        raise
    finally:
        for follower, thread in zip(followers, threads, strict=True):
            thread.join(max(0.0, follower.deadline - time.monotonic()) + 5)
    failed = [f.failed for f in followers if f.failed is not None]
    assert not failed, f"{len(failed)} streams did not end: {failed[:3]}"


def assert_woken(followers: list[Follower]) -> None:
    """Every event came by a wake-up (a NOTIFY, a move in the streaming
    process, or a listener's catch-up beat as it reconnected): no stream
    waited as long as its keep-alive. An idle stream re-reads the store
    every STREAM_HEARTBEAT, sending what it finds, or else a keep-alive
    comment; both are 30 s apart here, the polls too."""
    waited = [
        (f.task_id, f.keepalives, round(f.longest, 1))
        for f in followers
        if f.keepalives or f.longest >= HEARTBEAT - 1  # the last event's delivery: under 1 s
    ]
    assert not waited, (
        "streams that waited for a keep-alive's read (id, keep-alives, longest wait): a "
        f"wake-up was missed, or this machine made the test's outage last ~30 s: {waited}"
    )


def listening(server: Served, *, again: bool = False) -> bool:
    """The server's listener has connected, listened and seen its probe
    (``again``: after losing its connection)."""
    said = "listening again for task events" if again else "listening for task events"
    return said in server.output()


def outage_env(fake: FakeLLM, cluster: Cluster, **extra: str) -> dict[str, str]:
    return {
        **fake_env(fake),
        "DATABASE_URL": cluster.url,
        "LLM_TIMEOUT_MS": "60000",
        "TOOLNEXUS_EVENT_POLL_INTERVAL": POLL,
        "TOOLNEXUS_EVENT_FALLBACK_POLL_INTERVAL": POLL,
        "TOOLNEXUS_STREAM_HEARTBEAT": POLL,  # an idle stream's re-read: no rescue either
        "TOOLNEXUS_LOG_LEVEL": "INFO",
        **extra,
    }


# -- a restart in the middle of 100 streamed Tasks -------------------------------------------


class Gates:
    """The fake model's answers to the Tasks of two groups: each call is held
    until its group's gate opens (FakeLLM.release lets every held call go:
    here half of them go while the database is down), then answers its
    Task's text. Every call is still recorded by the fake."""

    MARKER = re.compile(r"outage-(\d)-\d+-[0-9a-f]+")

    def __init__(self, fake: FakeLLM) -> None:
        self.gates = {1: threading.Event(), 2: threading.Event()}
        self._held = 0
        self._lock = threading.Lock()
        fake.respond = self.respond

    @property
    def held(self) -> int:
        with self._lock:
            return self._held

    def open(self, group: int) -> None:
        self.gates[group].set()

    def open_all(self) -> None:
        for gate in self.gates.values():
            gate.set()

    def respond(self, body: dict[str, Any]) -> Reply | None:
        found = self.MARKER.search(first_user_text(body, "openai"))
        if found is None:
            return None
        with self._lock:
            self._held += 1
        try:
            if not self.gates[int(found[1])].wait(60):
                return None  # the fake's default; the test has failed by then
        finally:
            with self._lock:
                self._held -= 1
        return Text(f"answered {found[0]}")


def test_a_postgresql_restart_amid_100_streamed_tasks_loses_and_repeats_nothing(
    cluster: Cluster, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gates = Gates(fake_llm)
    env = outage_env(fake_llm, cluster)
    args = ("--workers", "1", "--threads", "4")
    with ExitStack() as stack:
        stack.callback(gates.open_all)
        a = stack.enter_context(serve(tmp_path, *args, env=env))
        b = stack.enter_context(serve(tmp_path, *args, env=env))
        a.wait_ready()
        b.wait_ready()

        # 100 Tasks, 50 sent to (and run by) each server, 25 of each group.
        def send(i: int) -> tuple[str, str, Served]:
            to, other = (a, b) if i % 2 == 0 else (b, a)
            marker = f"outage-{1 + i // 2 % 2}-{i}-{uuid.uuid4().hex[:8]}"
            task = RpcClient(f"{to.base}/agent/").send(f"{marker}: stream me")
            return task["id"], marker, other

        with ThreadPoolExecutor(8) as pool:
            sent = list(pool.map(send, range(100)))
        ids = [task_id for task_id, _, _ in sent]
        markers = {task_id: marker for task_id, marker, _ in sent}
        wait_until(lambda: gates.held == 100, timeout=30, what="100 model calls held")

        # Each followed on the other server than the one running it.
        deadline = time.monotonic() + 45
        followers = [
            Follower(task_id, [f"{other.base}/agent/"], deadline) for task_id, _, other in sent
        ]
        dropped = followers[::5]  # both groups, both servers
        with following(followers):
            working = [("1", STATE_TO_V1["submitted"]), ("2", STATE_TO_V1["working"])]
            wait_until(
                lambda: all(f.got == working for f in followers) and listening(a) and listening(b),
                timeout=DEADLINE,
                what="every stream to replay its log so far, and both listeners",
            )

            cluster.pg.stop("fast")
            gates.open(1)  # these runs end while the database is down
            # Meanwhile a fifth of the clients lose their connection, and
            # reconnect (from id "2") while the database is still down:
            # refused (an error, no stream), they try again until it is back.
            for follower in dropped:
                follower.hang_up()
            unreachable = "database unreachable; retrying"
            wait_until(
                lambda: (
                    unreachable in a.output()
                    and unreachable in b.output()
                    and all(f.connections >= 3 for f in dropped)
                ),
                timeout=DEADLINE,
                what="runs on both servers to find the database down, and clients refused",
            )
            cluster.pg.start()
            # Group 1's outcomes land as soon as their retries find it back:
            # heard if the listeners are back by then, else found by each
            # listener's catch-up beat when it is.
            wait_until(
                lambda: listening(a, again=True) and listening(b, again=True),
                timeout=DEADLINE,
                what="both listeners back",
            )
            released = time.monotonic()
            gates.open(2)  # these moves reach the streams by NOTIFY only
        ended_in = time.monotonic() - released

    # Every stream ended with its Task's final event; what each client got,
    # over however many connections, is exactly the stored event log.
    events = cluster.events(ids)
    tasks = cluster.tasks(ids)
    for follower in followers:
        task_id = follower.task_id
        log = events[task_id]
        assert [e[0] for e in log] == list(range(1, len(log) + 1)), log
        assert [e[1] for e in log] == ["submit", "claim", "complete"], (task_id, log)
        assert follower.got == stored(log), (task_id, follower.got, follower.cuts)
        assert follower.got[-1] == ("3", STATE_TO_V1["completed"])
        state, attempts, event_seq, _worker = tasks[task_id]
        assert (state, attempts, event_seq) == ("completed", 1, 3), (task_id, tasks[task_id])
        # Its one run made one model call: nothing ran twice.
        assert len(fake_llm.requests_for(markers[task_id])) == 1, task_id
    assert ended_in < DEADLINE, ended_in
    assert_woken(followers)
    # The restart itself cut no stream (a waiting stream holds no database
    # connection); the dropped clients resumed once the database was back.
    assert [f.task_id for f in followers if f.connections > 1] == [f.task_id for f in dropped]


# -- kill -9 of a server with open streams, and of a db_worker mid-run ----------------------


def test_kill_9_of_a_server_and_of_a_worker_mid_stream(
    cluster: Cluster, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    lease = 2.0
    env = outage_env(
        fake_llm,
        cluster,
        TOOLNEXUS_TASK_BACKEND="database",
        TOOLNEXUS_LEASE_SECONDS=f"{lease:g}",
        TOOLNEXUS_SWEEP_INTERVAL="0.5",
    )
    stays, dies = f"stays-{uuid.uuid4().hex[:8]}", f"dies-{uuid.uuid4().hex[:8]}"
    fake_llm.on(stays, Hang(max_seconds=60, then=Text(f"{stays}: done")))
    fake_llm.on(dies, Hang(max_seconds=60), Text(f"{dies}: run again"))
    args = ("--workers", "1", "--threads", "4")
    with ExitStack() as stack:
        a = stack.enter_context(serve(tmp_path, *args, env=env))
        b = stack.enter_context(serve(tmp_path, *args, env=env))
        workers = stack.enter_context(db_workers(tmp_path, env))
        started = [workers.start() for _ in range(3)]  # two runs held, one to spare
        for process in (a, b):
            process.wait_ready()
        for worker in started:
            worker.wait_ready()

        kept = RpcClient(f"{a.base}/agent/").send(f"{stays}: run me in a worker")["id"]
        lost = RpcClient(f"{b.base}/agent/").send(f"{dies}: run me in a worker")["id"]
        fake_llm.wait_held(2, timeout=20)

        # Both followed on A (two clients each), from the whole log; after a
        # cut, on B.
        deadline = time.monotonic() + 45
        urls = [f"{a.base}/agent/", f"{b.base}/agent/"]
        followers = [Follower(t, urls, deadline) for t in (kept, lost, kept, lost)]
        with following(followers):
            working = [("1", STATE_TO_V1["submitted"]), ("2", STATE_TO_V1["working"])]
            wait_until(
                lambda: all(f.got == working for f in followers) and listening(a),
                timeout=DEADLINE,
                what="every stream on A to replay its log so far",
            )
            dead = kill_group(a)
            # Each client lost its stream and resumes on B from id "2": B's
            # listener hears the workers' moves from now on.
            wait_until(
                lambda: all(f.connections >= 2 for f in followers) and listening(b),
                timeout=DEADLINE,
                what="every client to reconnect to B, and B's listener",
            )

            # kill -9 of the worker running `lost`, mid-run.
            runner = cluster.runner(lost)
            [victim] = [w for w in started if w.pid == runner]
            killed = victim.kill()
            # Its lease lapses, B's sweep requeues it, a spare worker runs it.
            wait_until(
                lambda: all(f.ended for f in followers if f.task_id == lost),
                timeout=lease + DEADLINE,
                what="the lost run's streams to end",
            )
            # B swept it (it logs so just after the move the clients saw).
            wait_until(
                lambda: f"Task {lost}: its worker died (attempt 1)" in b.output(),
                timeout=DEADLINE,
                what="B to log the recovery",
            )
            fake_llm.release()  # `kept` ends too
            wait_until(
                lambda: all(f.ended for f in followers),
                timeout=DEADLINE,
                what="the kept run's streams to end",
            )

    events = cluster.events([kept, lost])
    tasks = cluster.tasks([kept, lost])
    assert [e[1] for e in events[kept]] == ["submit", "claim", "complete"], events[kept]
    assert [e[1] for e in events[lost]] == ["submit", "claim", "requeue", "claim", "complete"], (
        events[lost]
    )
    for task_id in (kept, lost):
        log = events[task_id]
        assert [e[0] for e in log] == list(range(1, len(log) + 1)), log
    for follower in followers:
        # Cut once by the kill, resumed on B with the last id it had: the
        # two connections together sent the stored log exactly.
        assert follower.connections == 2, (follower.task_id, follower.cuts)
        assert follower.got == stored(events[follower.task_id]), (follower.got, follower.cuts)
    assert_woken(followers)
    assert tasks[kept][:3] == ("completed", 1, 3), tasks[kept]
    assert tasks[lost][:3] == ("completed", 2, 5), tasks[lost]
    # One model call for `kept`; for `lost`, the killed run's and the one re-run.
    assert len(fake_llm.requests_for(stays)) == 1
    assert len(fake_llm.requests_for(dies)) == 2
    # Every run was a worker's: `kept`'s went on through the server's death,
    # `lost`'s second one was the spare worker's.
    ran_by = {t: int(tasks[t][3].rsplit(":", 1)[1]) for t in (kept, lost)}
    assert ran_by[kept] in {w.pid for w in started} - killed - dead, ran_by
    assert ran_by[lost] in {w.pid for w in started} - killed - {ran_by[kept]}, ran_by
