"""Which process holds which PostgreSQL sessions.

A session's row in ``pg_stat_activity`` names the client's TCP port
(``client_port``); a process's TCP sockets, their local ports and the
inodes that tie them to the process are in ``/proc`` (Linux). Matching the
two counts each process's sessions exactly, whatever its threads or
``application_name`` (forked workers share the master's). Used by
tests/project_tools/test_tool_connections.py and benchmarks/tool_connections.py.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any


def process_group(pgid: int) -> list[int]:
    """The live processes of group ``pgid`` (a server started in a session of its own)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # after "pid (comm)": state ppid pgrp
            pids.append(int(entry.name))
    return pids


def _socket_inodes(pid: int) -> set[int]:
    inodes: set[int] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def ports_to(pid: int, server_port: int) -> set[int]:
    """Local ports of ``pid``'s established TCP connections to ``server_port``."""
    inodes = _socket_inodes(pid)
    ports = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], int(fields[9])
            if (
                state == "01"
                and inode in inodes
                and int(remote.rsplit(":", 1)[1], 16) == server_port
            ):
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def sessions_by_process(
    cursor: Any, pids: list[int], database: str, server_port: int
) -> dict[int, int]:
    """How many sessions of ``database`` in ``pg_stat_activity`` each of ``pids`` holds."""
    owner = {port: pid for pid in pids for port in ports_to(pid, server_port)}
    cursor.execute(
        "SELECT client_port FROM pg_stat_activity WHERE datname = %s AND client_port IS NOT NULL",
        [database],
    )
    counts = Counter(owner[port] for (port,) in cursor.fetchall() if port in owner)
    return {pid: counts.get(pid, 0) for pid in pids}


class SessionWatch:
    """Samples the sessions of a server's processes every ``interval`` seconds
    on a thread of its own (and a connection of its own, not counted), keeping
    each process's peak. ``with SessionWatch(...) as watch:`` ... ``watch.peak``."""

    def __init__(self, dsn: str, pgid: int, database: str, server_port: int,
                 interval: float = 0.1) -> None:  # fmt: skip
        self.dsn, self.pgid, self.database, self.server_port = dsn, pgid, database, server_port
        self.interval = interval
        self.peak: Counter[int] = Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="session-watch", daemon=True)
        self._error: BaseException | None = None

    def now(self) -> dict[int, int]:
        """Sessions per process at this moment (a connection of its own, closed at once)."""
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn, conn.cursor() as cursor:
            return sessions_by_process(
                cursor, process_group(self.pgid), self.database, self.server_port
            )

    def _watch(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn, conn.cursor() as cursor:
                while not self._stop.is_set():
                    pids = process_group(self.pgid)
                    for pid, n in sessions_by_process(
                        cursor, pids, self.database, self.server_port
                    ).items():
                        self.peak[pid] = max(self.peak[pid], n)
                    self.samples += 1
                    self._stop.wait(self.interval)
        except BaseException as exc:  # reported by __exit__
            self._error = exc

    def __enter__(self) -> SessionWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        if self._error is not None and exc[0] is None:
            raise self._error
