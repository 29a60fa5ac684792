"""How many streams a process may hold open: its open-file limit.

Each open stream (and each other connection) is one file descriptor of the
worker that serves it, and a waiting stream holds nothing else scarce (no
thread, no database connection), so the soft ``RLIMIT_NOFILE`` — 1,024 on
many systems — is the first bound a busy server meets: past it, accepting a
connection fails with ``EMFILE``. ``toolnexus_serve`` raises the soft limit
to the hard one before its workers fork (they inherit it), as servers that
hold many connections do, and says what it did — or that it could not, and
what bound stays.
"""

from __future__ import annotations

from typing import Any

try:
    import resource as _resource
except ImportError:  # Windows: no such limit to raise
    _resource = None  # type: ignore[assignment]

#: The soft limit asked for when the hard limit is unlimited.
UNLIMITED_TARGET = 1_048_576


def raise_open_files(resource: Any = _resource) -> tuple[bool, str] | None:
    """Raise this process's soft open-file limit to its hard limit: (whether
    it could, what to tell the operator), or None when there is nothing to
    say (already as high as allowed)."""
    if resource is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft == resource.RLIM_INFINITY or soft >= target:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        return False, (
            f"Open files: could not raise the soft limit from {soft} to {target} ({exc}); "
            f"each worker holds at most about {soft} connections and streams (raise it with "
            "ulimit -n, systemd's LimitNOFILE or the container's nofile)"
        )
    return True, f"Open files: raised the soft limit from {soft} to {target} (one per stream)"
