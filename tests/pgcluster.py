"""A throwaway PostgreSQL cluster for tests that restart the database server.

Never the shared server: :func:`pg_cluster` runs ``initdb`` into a fresh
directory, starts the cluster on a spare port listening on 127.0.0.1 only
(trust auth, its Unix socket in its own directory), and always stops it with
``pg_ctl stop -m immediate`` and deletes it afterwards. ``initdb`` refuses to
run as root, so under root every PostgreSQL binary runs as the ``postgres`` OS
user (``runuser -u postgres --``) in a directory that user owns -- made with
``mkdtemp`` under the system temp dir, since pytest's own base temp dir is
private to the user running the tests.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

PG_USER = "postgres"


def find_bindir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb (Debian's
    layout), else the directory of an ``initdb`` on PATH."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def unavailable() -> str | None:
    """Why a cluster cannot be made here, or ``None`` if it can."""
    if find_bindir() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl) on this machine"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(PG_USER)
        except KeyError:
            return f"running as root and there is no {PG_USER!r} OS user to run initdb as"
        if shutil.which("runuser") is None:
            return "running as root and there is no runuser to drop privileges with"
    return None


def _spare_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgCluster:
    bindir: Path
    base: Path  # owned by the cluster's OS user: data/, the socket, the log
    port: int

    @property
    def datadir(self) -> Path:
        return self.base / "data"

    @property
    def logfile(self) -> Path:
        return self.base / "postgres.log"

    def url(self, dbname: str = "postgres") -> str:
        return f"postgres://{PG_USER}@127.0.0.1:{self.port}/{dbname}"

    def _as_owner(self, *cmd: str) -> list[str]:
        return ["runuser", "-u", PG_USER, "--", *cmd] if os.geteuid() == 0 else list(cmd)

    def run(self, tool: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL binary as the cluster's owner; output captured."""
        return subprocess.run(
            self._as_owner(str(self.bindir / tool), *args),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.base,
        )

    def ctl(self, *args: str, timeout: float = 60) -> None:
        done = self.run("pg_ctl", "-D", str(self.datadir), *args, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(
                f"pg_ctl {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
            )

    def ready(self) -> bool:
        """``pg_isready`` over TCP (as the server's clients connect)."""
        done = self.run(
            "pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-t", "1", timeout=10
        )
        return done.returncode == 0

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if time.monotonic() >= deadline:
                raise AssertionError(f"PostgreSQL on port {self.port} not ready in {timeout}s")
            time.sleep(0.1)

    def start(self) -> None:
        self.ctl("start", "-w", "-t", "30", "-l", str(self.logfile))
        self.wait_ready()

    def stop(self, mode: str = "fast") -> None:
        self.ctl("stop", "-w", "-t", "30", "-m", mode)

    def restart(self, mode: str = "fast") -> None:
        """``pg_ctl restart -m <mode>``, then wait until it accepts connections."""
        self.ctl("restart", "-w", "-t", "30", "-m", mode, "-l", str(self.logfile))
        self.wait_ready()

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        done = self.run(
            "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", PG_USER, "-d", dbname,
            "-v", "ON_ERROR_STOP=1", "-Atc", sql, timeout=30,
        )  # fmt: skip
        if done.returncode != 0:
            raise AssertionError(f"psql failed ({done.returncode}): {done.stderr}")
        return done.stdout.strip()

    def log(self) -> str:
        try:
            return self.logfile.read_text(errors="replace")
        except OSError as e:
            return f"(no log: {e})"

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.datadir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None


def _initdb(bindir: Path, base: Path) -> None:
    cluster = PgCluster(bindir, base, 0)
    done = cluster.run(
        "initdb", "-D", str(cluster.datadir), "-A", "trust", "-U", PG_USER,
        "--no-sync", "-E", "UTF8", "--locale=C",
        timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"initdb exited {done.returncode}:\n{done.stdout}{done.stderr}")


def _configure(cluster: PgCluster) -> None:
    # In postgresql.conf (not -o), so `pg_ctl restart` keeps them.
    settings = {
        "listen_addresses": "'127.0.0.1'",
        "port": str(cluster.port),
        "unix_socket_directories": f"'{cluster.base}'",
        "max_connections": "40",
        "fsync": "off",  # throwaway data; restarts here are clean shutdowns
        "synchronous_commit": "off",
        "full_page_writes": "off",
    }
    conf = cluster.datadir / "postgresql.conf"
    with conf.open("a") as f:
        f.write("\n# tests/pgcluster.py\n")
        f.writelines(f"{key} = {value}\n" for key, value in settings.items())


def _kill_postmaster(cluster: PgCluster) -> None:
    """The last resort when ``pg_ctl stop`` failed: the postmaster this
    cluster started must not outlive the test."""
    pid = cluster.postmaster_pid()
    if pid is None:
        return
    try:  # only if that pid is still this cluster's postmaster
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return
    if str(cluster.datadir) in cmdline:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextmanager
def pg_cluster(attempts: int = 3) -> Iterator[PgCluster]:
    """A fresh, running cluster on a spare 127.0.0.1 port; its log is printed
    if the body fails; stopped (``-m immediate``) and deleted no matter what."""
    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError(unavailable() or "no PostgreSQL binaries")
    base = Path(tempfile.mkdtemp(prefix="toolnexus-pg-"))
    cluster: PgCluster | None = None
    try:
        if os.geteuid() == 0:
            owner = pwd.getpwnam(PG_USER)
            os.chown(base, owner.pw_uid, owner.pw_gid)
        _initdb(bindir, base)
        for attempt in range(attempts):
            # The port was free a moment ago; another process may take it first.
            cluster = PgCluster(bindir, base, _spare_port())
            _configure(cluster)
            try:
                cluster.start()
                break
            except AssertionError:
                if attempt == attempts - 1:
                    print(f"--- PostgreSQL log ({cluster.logfile}) ---\n{cluster.log()}")
                    raise
        assert cluster is not None
        try:
            yield cluster
        except BaseException:
            print(f"--- PostgreSQL log ({cluster.logfile}) ---\n{cluster.log()}")
            raise
    finally:
        if cluster is not None:
            try:
                cluster.stop("immediate")
            except Exception:
                _kill_postmaster(cluster)
        shutil.rmtree(base, ignore_errors=True)
