"""The ``TOOLNEXUS`` setting: one dict, documented defaults, read lazily.

Modelled on DRF's ``api_settings``: attribute access reads ``settings.TOOLNEXUS``
on first use and caches the merged result; Django's ``setting_changed`` signal
(sent by ``override_settings`` and pytest-django's ``settings`` fixture) drops
the cache so tests see their overrides.

Every read goes through here: the dict sections (``toolnexus_settings.PUSH``,
``.REVIEW``, ``.MCP``) and the dotted paths, imported by :func:`import_path`
(DRF's ``IMPORT_STRINGS`` way) with an ``ImproperlyConfigured`` naming the
setting. Validation is :mod:`toolnexus_django.checks` (one id per problem).
The keys that retired or moved, and how they are still read: :mod:`.conf_legacy`.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from .conf_legacy import MOVED as MOVED
from .conf_legacy import RETIRED as RETIRED
from .conf_legacy import read_moved
from .conf_legacy import written as written

SETTING_NAME = "TOOLNEXUS"

#: Every recognised key and its default. Keys not listed here (nor in
#: conf_legacy's RETIRED or MOVED) are reported by check ``toolnexus_django.E101``.
DEFAULTS: dict[str, Any] = {
    # Where Tasks live: "memory" | "file:<dir>" | "django" | "django:<db alias>"
    # | a TaskStore instance | a dotted path to a TaskStore class or instance.
    "STORE": "memory",
    # The Agent Card. ``skills`` filters the toolkit's SKILL.md skills by name
    # (None = all of them).
    "AGENT": {
        "name": "toolnexus-agent",
        "description": "",
        "version": "0.1.0",
        "provider": None,
        "skills": None,
    },
    # How the toolkit is built: a dict of create_toolkit() options, or a dotted
    # path to a factory ``() -> Toolkit`` (sync or async).
    #   skills_dir: str | Path | list | None
    #   mcp_config: str | dict | None
    #   builtins:   bool (toolnexus's built-in tools; off by default here)
    #   tools:      dotted paths of native toolnexus Tools offered on every turn
    "TOOLKIT": {
        "skills_dir": None,
        "mcp_config": None,
        "builtins": False,
        "tools": [],
    },
    # How the model client is built: a dict of create_client() options, or a
    # dotted path to a factory ``() -> Client``.
    #   base_url, style ("openai" | "anthropic"), model, api_key, plus any other
    #   create_client keyword (timeout_ms, max_turns, retries, system_prompt, ...)
    "CLIENT": {
        "base_url": None,
        "style": "openai",
        "model": None,
        "api_key": None,
    },
    # DRF authentication / permission classes for the JSON-RPC endpoint.
    # None = DRF's DEFAULT_AUTHENTICATION_CLASSES / DEFAULT_PERMISSION_CLASSES.
    "AUTHENTICATION_CLASSES": None,
    "PERMISSION_CLASSES": None,
    # Which Django Tasks backend runs fulfilment: None = the app's own
    # in-process backend (no broker, no extra process); otherwise an alias of
    # settings.TASKS (e.g. a django-tasks-db DatabaseBackend with db_worker).
    "TASK_BACKEND": None,
    # Upper bound, in seconds, on one run inside a worker (None = no bound
    # beyond the client's own timeout_ms).
    "RUN_TIMEOUT": None,
    # Human review:
    #   NOTIFY_EMAILS: who is e-mailed when a Task starts waiting on a person
    #     (Django's mail framework; empty = no mail).
    #   BASE_URL: the absolute base URL the link to its review page starts
    #     with (e.g. "https://ops.example.com"; None = a site-relative link).
    #   HOLD_SECONDS: a reviewer's hold on a Task lapses after this long
    #     (CLAIM_SECONDS before: still read, with a warning, W101).
    #   APPROVALS: {tool name: approvals needed}; 2 = four eyes (two different
    #     reviewers approve before the run resumes). Tools not named need one.
    #   EDIT_ARGUMENTS: reviewers may change a halted tool call's arguments
    #     (validated against the tool's input schema) when they approve it.
    #   REMIND_BEFORE: seconds before a Request expires that a reminder goes
    #     to REMIND_EMAILS (None = NOTIFY_EMAILS); None = no reminder.
    #   ESCALATE_AFTER: seconds after the reminder that an escalation goes to
    #     ESCALATE_EMAILS; None = no escalation. Both also send a signal
    #     (review_reminder, review_escalation), once, however many processes sweep.
    #   EXPIRY_LOG_USER: the username an expired Request is logged as in the
    #     admin log (LogEntry needs a user); None = expiries are not logged there.
    #   ALLOW_SELF_APPROVAL: a reviewer may answer a Request of their own Task
    #     that only a reviewer may answer (an approval they asked for). Off:
    #     segregation of duties; on, manage.py check warns (W011).
    "REVIEW": {
        "NOTIFY_EMAILS": [],
        "BASE_URL": None,
        "HOLD_SECONDS": 900.0,
        "APPROVALS": {},
        "EDIT_ARGUMENTS": True,
        "REMIND_BEFORE": None,
        "REMIND_EMAILS": None,
        "ESCALATE_AFTER": None,
        "ESCALATE_EMAILS": [],
        "EXPIRY_LOG_USER": None,
        "ALLOW_SELF_APPROVAL": False,
    },
    # How often, in seconds, a serving process sweeps: answers expired
    # Requests (ok=False, reason "expired") and recovers Tasks whose worker
    # died; 0 turns the in-process sweep off (run manage.py toolnexus_sweep).
    "EXPIRY_SWEEP_INTERVAL": 5.0,
    # Seconds a stopping process gives its requests and running Tasks (what
    # is still running after it is handed back, to be run again).
    "GRACE_SECONDS": 10.0,
    # A worker's claim on a running Task lasts this many seconds and is
    # renewed every third of it; a dead worker's Task runs again soon after.
    "LEASE_SECONDS": 20.0,
    # Runs started per Task before it ends failed ("the run was interrupted").
    "MAX_ATTEMPTS": 3,
    # A submitted Task still not taken after this many seconds is enqueued
    # again (its enqueue may have been lost with its process).
    "REQUEUE_AFTER": 60.0,
    # Conversation memory per contextId: "auto" | "django" | "memory" | None
    # | a dotted path to a toolnexus ConversationStore.
    "CONVERSATIONS": "auto",
    # How long a blocking send (v0.3 blocking, v1.0 returnImmediately=false)
    # waits for the Task to finish or stop for input, in seconds.
    "BLOCKING_TIMEOUT": 60.0,
    # Streaming (SSE): the longest one stream may stay open, and how often an
    # idle stream sends a keep-alive comment, in seconds.
    "STREAM_MAX_SECONDS": 300.0,
    "STREAM_HEARTBEAT": 15.0,
    # A Task sent by a streaming method streams from the model: its streams
    # show its answer as it is written and each tool call. False: the moves only.
    "STREAM_LIVE_UPDATES": True,
    # A streamed run's answer, as it is written: at most one chunk per Task
    # every STREAM_CHUNK_SECONDS (0: one per model delta), sooner once
    # STREAM_CHUNK_CHARS characters wait.
    "STREAM_CHUNK_SECONDS": 0.1,
    "STREAM_CHUNK_CHARS": 1000,
    # Open streams plus blocking sends one process holds at once (each holds a
    # server thread); past it streams are refused "busy" and blocking sends
    # return at once. None = no limit.
    "MAX_HELD_REQUESTS": 4,
    # How often, in seconds, a process looks for other processes' moves of
    # the Tasks its blocking sends and streams wait on (one query per
    # process, however many wait; moves in the same process wake them at once).
    "EVENT_POLL_INTERVAL": 0.2,
    # The django store on PostgreSQL: each move NOTIFYs, and one connection per
    # process LISTENs (while anything waits) on EVENT_LISTENER: None = the
    # store's own database alias; an alias of DATABASES; a DSN; False = poll
    # only. Not a pooler in transaction mode: it drops LISTEN. While it listens,
    # the poll above slows to EVENT_FALLBACK_POLL_INTERVAL seconds.
    "EVENT_LISTENER": None,
    "EVENT_FALLBACK_POLL_INTERVAL": 5.0,
    # Threads (and so database connections, kept open) of a process for the
    # short database work of its coroutines: the ASGI endpoint's reads and
    # writes, the runs' claims and outcomes. The process's connection budget.
    # Runs (first runs and resumes) in flight at once per process. A run
    # waiting on its model holds no thread and no database connection; a run
    # past the bound waits its turn as submitted (never refused).
    # Idempotent sends: a send that repeats a messageId its owner used
    # within this many seconds returns that Task (no second Task, no second
    # run). None: for ever; 0: every send makes a Task.
    "IDEMPOTENCY_WINDOW": 86400.0,
    "MAX_RUNS": 256,
    "DATABASE_THREADS": 16,
    # Threads for tool calls' database work, one per call from its first
    # need of a thread to its end (more calls wait for one, never fail): the
    # most database connections tools hold, on top of DATABASE_THREADS + 4.
    # Framed as Django frames a request (close_old_connections), so
    # CONN_MAX_AGE applies. Chosen by measurement: benchmarks/RESULTS.md.
    "TOOL_THREADS": 16,
    # Seconds a client has to send a request's headers, and again its body
    # (toolnexus_serve, whatever the path; the ASGI endpoint under other
    # servers): a slow or idle client is disconnected, never waited on for ever.
    "READ_TIMEOUT": 30.0,
    # Seconds a process remembers a caller's Authorization header that DRF's
    # own BasicAuthentication or TokenAuthentication verified (0: never): the
    # bound on how long a revoked token or password still works elsewhere.
    "CREDENTIAL_CACHE_SECONDS": 5.0,
    # The most bytes of a request's line and headers under toolnexus_serve,
    # counted as they arrive: past it 431, and the connection is closed.
    # 64 KiB: room for large cookies and tokens (nginx allows 4 x 8 KiB by
    # default, uvicorn's h11 16 KiB), and 200 unfinished headers hold 13 MB at most.
    "MAX_HEADER_BYTES": 65536,
    # Who may answer a pending Request, by its kind ("*" = any other kind):
    # "reviewer" (the admin, or code acting for a user with the answer_task
    # permission), "requester" (the Task's owner, by an A2A message carrying
    # the taskId), or a list of both.
    "ANSWERERS": {
        "approval": ["reviewer"],
        "authorization": ["reviewer"],
        "*": ["requester", "reviewer"],
    },
    # The same per tool name, for the Requests that tool makes; it wins over
    # ANSWERERS and over a tool's own data["answerers"].
    "TOOL_ANSWERERS": {},
    # Bounds on what a Task stores. A run's final text (and any one message
    # of a stored transcript) longer than MAX_OUTPUT_CHARS is cut with a
    # visible marker; a Task keeps its last MAX_HISTORY_MESSAGES messages; a
    # conversation remembers its last MAX_MEMORY_MESSAGES model messages.
    "MAX_OUTPUT_CHARS": 1_000_000,
    "MAX_HISTORY_MESSAGES": 100,
    "MAX_MEMORY_MESSAGES": 200,
    # The most bytes read from one model answer (and from an HTTP error's
    # body), with a dict CLIENT: past it the run fails, never reading the
    # rest. 4 MiB: several times the JSON of the longest answer models give
    # (128k output tokens is about 0.5 MB of text), while one answer parsed
    # stays a few times that in memory.
    "MAX_MODEL_RESPONSE_BYTES": 4 * 1024 * 1024,
    # The Agent Card's security schemes: None = derived from the endpoint's
    # authentication classes; or a dict {name: scheme} in the A2A v0.3
    # (OpenAPI) form, e.g. {"bearer": {"type": "http", "scheme": "bearer"}}.
    "SECURITY_SCHEMES": None,
    # The extended Agent Card authenticated callers get (GetExtendedAgentCard,
    # GET <prefix>/extendedAgentCard): a callable (request, public card) ->
    # card, or its dotted path; None = no extended card.
    "EXTENDED_AGENT_CARD": "toolnexus_django.a2a.card.authenticated_card",
    # Signs both Agent Cards: an EC P-256 key (PEM or path); None = PUSH's SIGNING_KEY; False: off.
    "CARD_SIGNING_KEY": None,
    # Push notifications (the django store): hosts a webhook may be on although
    # they resolve to loopback or private addresses (names, ".suffix", or IPs);
    # seconds per call; consecutive failures before a config is disabled; the
    # first retry's delay, doubling up to the last; delivering threads.
    "PUSH": {
        "ALLOWED_HOSTS": [],
        "TIMEOUT": 10.0,
        "MAX_ATTEMPTS": 8,
        "RETRY_DELAY": 1.0,
        "MAX_RETRY_DELAY": 300.0,
        "THREADS": 4,
        # An EC P-256 private key (PEM, or a PEM file's path): notifications are then
        # signed (ES256; keys at <prefix>/.well-known/jwks.json). ISSUER: "iss" (None: AGENT name).
        "SIGNING_KEY": None,
        "ISSUER": None,
    },
    # The toolkit as an MCP server (streamable HTTP, stateless) at <prefix>/mcp.
    # Lower-case keys are toolnexus's own MCP serve options:
    #   tools:   None = off (no endpoint: 404); "__all__" = every tool of the
    #            toolkit; or a list of tool names, as toolnexus names them.
    #   name, version: what initialize reports (None: AGENT's name and version).
    # Upper-case keys are this app's:
    #   AUTHENTICATION_CLASSES / PERMISSION_CLASSES: DRF classes (None = the
    #     A2A endpoint's own); an unauthenticated call gets 401 + WWW-Authenticate.
    #   MAX_REQUEST_BYTES: the largest request body (413 past it).
    #   CALL_TIMEOUT: seconds one tools/call may run (then an isError result).
    #   MAX_CONCURRENT_CALLS: tools/calls one process runs at once (past it, an
    #     isError result "busy" at once).
    #   AUDIT: store every tools/call as a row (the admin's "MCP calls"); the
    #     mcp_called signal is sent either way.
    "MCP": {
        "tools": None,
        "name": None,
        "version": None,
        "AUTHENTICATION_CLASSES": None,
        "PERMISSION_CLASSES": None,
        "MAX_REQUEST_BYTES": 1_048_576,
        "CALL_TIMEOUT": 60.0,
        "MAX_CONCURRENT_CALLS": 8,
        "AUDIT": True,
    },
    # gRPC (the ``grpc`` extra): every toolnexus_serve worker serves it on ADDRESS,
    # "host:port" (None: off); the card names URL (None: ADDRESS; set it for 0.0.0.0).
    "GRPC": {"ADDRESS": None, "URL": None},
    # OpenTelemetry traces (the ``otel`` extra): True records spans to the
    # global tracer provider (the project configures its exporters); False:
    # OpenTelemetry is never imported.
    "TRACING": False,
    # Prometheus metrics at <prefix>/metrics (``metrics`` extra): None = off; {TOKEN, PERMISSION}.
    "METRICS": None,
}

#: Nested dict settings whose missing keys fall back to the defaults above.
_NESTED = ("AGENT", "TOOLKIT", "CLIENT", "ANSWERERS", "PUSH", "REVIEW", "MCP", "GRPC")
#: Sections that are only ever dicts of options: one that is not reads as its
#: defaults (the checks report it), so ``toolnexus_settings.PUSH[key]`` holds.
SECTIONS = ("PUSH", "REVIEW", "MCP", "GRPC")


def setting_name(*path: str | int) -> str:
    """How messages name a setting: ``setting_name("PUSH", "TIMEOUT")`` is
    ``TOOLNEXUS['PUSH']['TIMEOUT']``."""
    return SETTING_NAME + "".join(f"[{part!r}]" for part in path)


def import_path(value: Any, setting: str) -> Any:
    """``value`` imported when it is a dotted path, else ``value`` itself: the
    one place settings' dotted paths are imported. One that does not import
    is an ``ImproperlyConfigured`` naming ``setting`` (see :func:`setting_name`),
    the ``ImportError`` its cause."""
    if not isinstance(value, str):
        return value
    try:
        return import_string(value)
    except ImportError as e:
        raise ImproperlyConfigured(f"{setting} = {value!r} cannot be imported: {e}") from e


class ToolnexusSettings:
    """Lazy, cached view of ``settings.TOOLNEXUS`` merged over :data:`DEFAULTS`."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] | None = None
        self._imports: dict[tuple[str, ...], Any] = {}
        self._lock = threading.Lock()
        self._reload_hooks: list[Callable[[], None]] = []

    @property
    def user_settings(self) -> dict[str, Any]:
        value = getattr(django_settings, SETTING_NAME, None)
        return dict(value) if isinstance(value, dict) else {}

    def _merged(self) -> dict[str, Any]:
        cache = self._cache
        if cache is None:
            with self._lock:
                if self._cache is None:
                    self._cache = merge(self.user_settings)
                cache = self._cache
        return cache

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in DEFAULTS:
            raise AttributeError(f"Invalid TOOLNEXUS setting: {name!r}")
        return self._merged()[name]

    def as_dict(self) -> dict[str, Any]:
        return dict(self._merged())

    def imported(self, *path: str) -> Any:
        """The setting at ``path`` (``"MCP", "PERMISSION_CLASSES"``) with its
        dotted paths imported, a list's entries one by one (DRF's
        ``IMPORT_STRINGS``): imported once, again after the setting changes."""
        imports = self._imports  # reload() replaces it: read one
        if path not in imports:
            value = self._merged()
            for key in path:
                value = value[key]
            if isinstance(value, (list, tuple)):
                value = [import_path(v, setting_name(*path, i)) for i, v in enumerate(value)]
            else:
                value = import_path(value, setting_name(*path))
            imports[path] = value
        found = imports[path]
        return list(found) if isinstance(found, list) else found  # a caller's list to change

    def on_reload(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` whenever the setting changes (per-process caches use this)."""
        self._reload_hooks.append(hook)

    def reload(self) -> None:
        with self._lock:
            self._cache = None
            self._imports = {}
        for hook in list(self._reload_hooks):
            hook()


#: The keys AGENT takes (the Agent Card's own fields).
AGENT_KEYS = ("name", "description", "version", "provider", "skills")
#: TOOLKIT keys this app interprets; the rest go to toolnexus.create_toolkit.
TOOLKIT_KEYS = ("skills_dir", "mcp_config", "builtins", "tools")


def merge(user: dict[str, Any]) -> dict[str, Any]:
    """Overlay the user's dict on the defaults (one level deep for dict
    sections), the keys that moved (:data:`MOVED`) read under their new name."""
    merged: dict[str, Any] = {}
    for key, default in DEFAULTS.items():
        # Deep copies: a caller mutating what it read (say TOOLKIT["tools"])
        # must not change the defaults for the rest of the process.
        value = user.get(key)
        if key in _NESTED and isinstance(value, dict):
            merged[key] = {**copy.deepcopy(default), **value}
        elif key not in user or key in SECTIONS:
            merged[key] = copy.deepcopy(default)
        else:
            merged[key] = value
    read_moved(user, merged)
    return merged


toolnexus_settings = ToolnexusSettings()


@receiver(setting_changed)
def _reload_toolnexus_settings(*, setting: str, **kwargs: Any) -> None:
    if setting in (SETTING_NAME, "DATABASES", "TASKS"):
        toolnexus_settings.reload()
