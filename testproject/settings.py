"""Settings of the demo / test project, read from the environment.

DATABASE_URL      default sqlite:///<repo>/var/db.sqlite3 (also sqlite:////abs/path,
                  postgres://user@host:port/name)
TOOLNEXUS_STORE   default "django" ("memory", "file:<dir>", "django")
TOOLNEXUS_TASK_BACKEND  unset: the in-process backend; "database": django-tasks-db;
                  "rq": django-tasks-rq (manage.py rqworker --job-class django_tasks_rq.Job)
TOOLNEXUS_RQ_URL  the Redis of the "rq" backend (default redis://127.0.0.1:6379/0; the
                  tests give each test a database number of its own)
TOOLNEXUS_LEASE_SECONDS / _MAX_ATTEMPTS / _REQUEUE_AFTER / _SWEEP_INTERVAL: recovery timing
TOOLNEXUS_EVENT_POLL_INTERVAL / _EVENT_FALLBACK_POLL_INTERVAL: the wake-ups' polls, seconds
TOOLNEXUS_STREAM_HEARTBEAT: seconds between an idle stream's keep-alives (and re-reads)
TOOLNEXUS_STREAM_LIVE_UPDATES  "0": streams show the moves only (unset: the answer as it is written)
TOOLNEXUS_EVENT_LISTENER  unset: LISTEN on the store's database; "off": poll only; or a DSN
TOOLNEXUS_MAX_MODEL_RESPONSE_BYTES: the bound on a model answer (benchmarks/model_answer_rss.py)
TOOLNEXUS_MCP_TOOLS  unset: no MCP endpoint; "__all__" or comma-separated tool names
TOOLNEXUS_GRPC_ADDRESS  unset: no gRPC; "host:port": toolnexus_serve serves gRPC there too
TOOLNEXUS_PERMISSION_CLASSES  unset: AllowAny; comma-separated DRF permission classes
TOOLNEXUS_TRACING  "1": OpenTelemetry spans (TRACING; unset: off)
TOOLNEXUS_METRICS_TOKEN  unset: no /agent/metrics; set: Prometheus metrics for that bearer token
DEMO_AGENT        "expenses" (default): the expenses app's tools, acting as the signed-in
                  requester; "example": the permission-free example tools on an endpoint
                  without authentication (the test suite's)
LLM_BASE_URL      unset: a deterministic offline demo model runs in-process
LLM_STYLE         openai | anthropic (default openai)
LLM_MODEL         default "demo-model"
LLM_API_KEY       default "not-needed"
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "insecure-demo-key-do-not-use-in-production")
DEBUG = os.environ.get("DJANGO_DEBUG", "") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    # DRF's tokens: a peer agent calls the expenses agent as a Django user with
    # one (`manage.py drf_create_token <username>`; "Authorization: Token <key>").
    "rest_framework.authtoken",
    "toolnexus_django",
    # The demo's own data: expense claims its agent files (testproject/expenses).
    "testproject.expenses",
]
# django-tasks-db (the tests' db_worker backend) is a test dependency: the
# demo runs without it (pip install -e '.[demo]').
HAS_TASKS_DB = importlib.util.find_spec("django_tasks_db") is not None
if HAS_TASKS_DB:
    INSTALLED_APPS.insert(-1, "django_tasks_db")
# django-tasks-rq (the tests' rqworker backend) likewise; its RQ queues are
# django-rq's, whose app provides `manage.py rqworker`.
HAS_TASKS_RQ = importlib.util.find_spec("django_tasks_rq") is not None
if HAS_TASKS_RQ:
    INSTALLED_APPS.insert(-1, "django_rq")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "testproject.urls"
WSGI_APPLICATION = "testproject.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_database_url = os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}"
# Persistent connections (DATABASE_CONN_MAX_AGE seconds) more than double
# GetTask throughput under toolnexus_serve (benchmarks/RESULTS.md); the test
# suite keeps 0 so every thread's connection closes after its work.
_database = dj_database_url.parse(
    _database_url,
    conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
    conn_health_checks=True,
)
if _database["ENGINE"] == "django.db.backends.sqlite3":
    # Request threads and worker threads both write: take the write lock up
    # front (no "database is locked" on upgrade) and wait for it a while.
    _database["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests need a file, not :memory:, so worker threads share the database;
    # one per test run, so concurrent runs on one machine never collide.
    _database["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
else:
    _database["TEST"] = {"NAME": f"test_{_database['NAME']}_{os.getpid()}"}
DATABASES = {"default": _database}

AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# Unset, Django's test live server would answer every path from MEDIA_ROOT
# (the working directory) before the project's URLs.
MEDIA_URL = "media/"
MEDIA_ROOT = VAR_DIR / "media"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
}

_llm_base_url = os.environ.get("LLM_BASE_URL")
if _llm_base_url:
    _client: object = {
        "base_url": _llm_base_url,
        "style": os.environ.get("LLM_STYLE", "openai"),
        "model": os.environ.get("LLM_MODEL", "demo-model"),
        "api_key": os.environ.get("LLM_API_KEY", "not-needed"),
        "timeout_ms": int(os.environ.get("LLM_TIMEOUT_MS", "120000")),
        "retries": int(os.environ.get("LLM_RETRIES", "2")),
    }
else:
    _client = "testproject.demo.offline_client"

# Fulfilment runs on the app's in-process backend unless TOOLNEXUS_TASK_BACKEND
# names another: "database" = django-tasks-db, run by `manage.py db_worker
# --backend database` processes; "rq" = django-tasks-rq on Redis, run by
# `manage.py rqworker --job-class django_tasks_rq.Job` processes.
TASKS = {"default": {"BACKEND": "toolnexus_django.backends.InProcessBackend"}}
if HAS_TASKS_DB:
    TASKS["database"] = {"BACKEND": "django_tasks_db.DatabaseBackend"}
if HAS_TASKS_RQ:
    TASKS["rq"] = {"BACKEND": "django_tasks_rq.RQBackend"}
    # The app's jobs go to the Django Tasks queue "default", which is the RQ
    # queue of that name: tests keep theirs apart by Redis database number.
    RQ_QUEUES = {"default": {"URL": os.environ.get("TOOLNEXUS_RQ_URL", "redis://127.0.0.1:6379/0")}}

#: The demo's agent, chosen by DEMO_AGENT: its tools, and how its endpoint
#: learns who asks (anonymous callers are admitted either way).
#: "expenses" (the default): file_expense and my_expenses act on the expenses
#:   app as the person who asked (testproject/expenses/tools.py), so they are
#:   offered only to a signed-in requester allowed to use them; the endpoint
#:   knows who asks (HTTP Basic, a DRF token — a peer agent's — or a
#:   signed-in admin session).
#: "example": the app's example file_expense (no permission, no database) on
#:   an endpoint without authentication: what the test suite was written
#:   against, anonymous callers and all (tests/conftest.py selects it for the
#:   suite and for every server it starts).
DEMO_AGENTS: dict[str, dict[str, list[str]]] = {
    "expenses": {
        "tools": [
            "testproject.expenses.tools.file_expense",
            "testproject.expenses.tools.my_expenses",
            "testproject.demo.ask_requester",
            "testproject.demo.pay_supplier",
        ],
        "authentication": [
            "rest_framework.authentication.BasicAuthentication",
            "rest_framework.authentication.TokenAuthentication",
            "rest_framework.authentication.SessionAuthentication",
        ],
    },
    "example": {
        "tools": [
            "testproject.demo.file_expense",
            "testproject.demo.ask_requester",
            "testproject.demo.pay_supplier",
        ],
        "authentication": [],
    },
}
_agent = os.environ.get("DEMO_AGENT") or "expenses"
if _agent not in DEMO_AGENTS:
    raise ImproperlyConfigured(f"DEMO_AGENT must be one of {sorted(DEMO_AGENTS)}")

TOOLNEXUS = {
    "STORE": os.environ.get("TOOLNEXUS_STORE", "django"),
    "AGENT": {
        "name": "filing-desk",
        "description": "Files expense claims (with a person's approval) and summarises text.",
        "version": "0.1.0",
        "provider": {"organization": "toolnexus-django demo", "url": "https://example.invalid"},
    },
    "TOOLKIT": {
        "skills_dir": BASE_DIR / "testproject" / "skills",
        "builtins": False,
        "tools": DEMO_AGENTS[_agent]["tools"],
    },
    # Human review: payments need two different reviewers (four eyes); expense
    # claims one. A reviewer's hold lapses after TOOLNEXUS_HOLD_SECONDS (15 minutes).
    "REVIEW": {
        "APPROVALS": {"pay_supplier": 2},
        "HOLD_SECONDS": float(os.environ.get("TOOLNEXUS_HOLD_SECONDS", "900")),
    },
    "CLIENT": _client,
    "TASK_BACKEND": os.environ.get("TOOLNEXUS_TASK_BACKEND") or None,
    # Recovery timing (the crash tests shorten these).
    "LEASE_SECONDS": float(os.environ.get("TOOLNEXUS_LEASE_SECONDS", "20")),
    "MAX_ATTEMPTS": int(os.environ.get("TOOLNEXUS_MAX_ATTEMPTS", "3")),
    "REQUEUE_AFTER": float(os.environ.get("TOOLNEXUS_REQUEUE_AFTER", "60")),
    "EXPIRY_SWEEP_INTERVAL": float(os.environ.get("TOOLNEXUS_SWEEP_INTERVAL", "5")),
    # Wake-ups across processes (the cross-server tests slow the polls to 30 s:
    # only NOTIFY can then wake a stream in time).
    "EVENT_POLL_INTERVAL": float(os.environ.get("TOOLNEXUS_EVENT_POLL_INTERVAL", "0.2")),
    # An idle stream re-reads the Task this often (they slow it too).
    "STREAM_HEARTBEAT": float(os.environ.get("TOOLNEXUS_STREAM_HEARTBEAT", "15")),
    # Live updates on streams (benchmarks/live_streams.py measures both).
    "STREAM_LIVE_UPDATES": os.environ.get("TOOLNEXUS_STREAM_LIVE_UPDATES", "1") != "0",
    "EVENT_FALLBACK_POLL_INTERVAL": float(
        os.environ.get("TOOLNEXUS_EVENT_FALLBACK_POLL_INTERVAL", "5")
    ),
    # Capacity (the scale tests and benchmarks set these).
    "MAX_RUNS": int(os.environ.get("TOOLNEXUS_MAX_RUNS", "256")),
    "READ_TIMEOUT": float(os.environ.get("TOOLNEXUS_READ_TIMEOUT", "30")),
    "MAX_HEADER_BYTES": int(os.environ.get("TOOLNEXUS_MAX_HEADER_BYTES", "65536")),
    # Push notifications: hosts a webhook may be on though they are local
    # (the tests' receivers on 127.0.0.1), comma-separated.
    "PUSH": {
        "ALLOWED_HOSTS": [
            h.strip()
            for h in os.environ.get("TOOLNEXUS_PUSH_ALLOWED_HOSTS", "").split(",")
            if h.strip()
        ],
        # The crash tests shorten these.
        "TIMEOUT": float(os.environ.get("TOOLNEXUS_PUSH_TIMEOUT", "10")),
        "RETRY_DELAY": float(os.environ.get("TOOLNEXUS_PUSH_RETRY_DELAY", "1")),
    },
    # The demo endpoint is open to anonymous callers, who are offered only the
    # tools that need no permission; the expenses agent also knows who asks.
    # Real projects pick their DRF classes here (docs/howto/authenticate.md).
    "AUTHENTICATION_CLASSES": DEMO_AGENTS[_agent]["authentication"],
    "PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
}
# Unset, the app's default: 16, or 4 when the default database is SQLite.
if os.environ.get("TOOLNEXUS_DATABASE_THREADS"):
    TOOLNEXUS["DATABASE_THREADS"] = int(os.environ["TOOLNEXUS_DATABASE_THREADS"])
if os.environ.get("TOOLNEXUS_CREDENTIAL_CACHE_SECONDS"):  # the benchmarks' 0: never
    TOOLNEXUS["CREDENTIAL_CACHE_SECONDS"] = float(os.environ["TOOLNEXUS_CREDENTIAL_CACHE_SECONDS"])
if os.environ.get("TOOLNEXUS_MAX_MODEL_RESPONSE_BYTES"):
    TOOLNEXUS["MAX_MODEL_RESPONSE_BYTES"] = int(os.environ["TOOLNEXUS_MAX_MODEL_RESPONSE_BYTES"])
# Where each process LISTENs for other processes' moves (unset: the store's own
# database; "off": it polls only; else an alias or a DSN).
if os.environ.get("TOOLNEXUS_EVENT_LISTENER"):
    _listener = os.environ["TOOLNEXUS_EVENT_LISTENER"]
    TOOLNEXUS["EVENT_LISTENER"] = False if _listener == "off" else _listener
# The gRPC binding on TOOLNEXUS_GRPC_ADDRESS ("host:port"; unset: off), and
# the endpoint's DRF permission classes (comma-separated; unset: AllowAny).
if os.environ.get("TOOLNEXUS_GRPC_ADDRESS"):
    TOOLNEXUS["GRPC"] = {"ADDRESS": os.environ["TOOLNEXUS_GRPC_ADDRESS"]}
if os.environ.get("TOOLNEXUS_PERMISSION_CLASSES"):
    TOOLNEXUS["PERMISSION_CLASSES"] = os.environ["TOOLNEXUS_PERMISSION_CLASSES"].split(",")
# The toolkit as an MCP server at /agent/mcp: TOOLNEXUS_MCP_TOOLS = "__all__" or
# comma-separated tool names (unset: off). Behind HTTP Basic (Django users),
# unlike the open demo A2A endpoint: MCP callers run tools directly.
_mcp_tools = os.environ.get("TOOLNEXUS_MCP_TOOLS", "").strip()
if _mcp_tools:
    TOOLNEXUS["MCP"] = {
        "tools": (
            "__all__"
            if _mcp_tools == "__all__"
            else [t.strip() for t in _mcp_tools.split(",") if t.strip()]
        ),
        "AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
        "PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
        "CALL_TIMEOUT": float(os.environ.get("TOOLNEXUS_MCP_CALL_TIMEOUT", "60")),
    }
# Observability (docs/howto/observability.md): TOOLNEXUS_TRACING=1 sends spans to
# the global tracer provider (set one, or run under opentelemetry-instrument);
# TOOLNEXUS_METRICS_TOKEN=<secret> serves /agent/metrics to that bearer token.
if os.environ.get("TOOLNEXUS_TRACING") == "1":
    TOOLNEXUS["TRACING"] = True
if os.environ.get("TOOLNEXUS_METRICS_TOKEN"):
    TOOLNEXUS["METRICS"] = {"TOKEN": os.environ["TOOLNEXUS_METRICS_TOKEN"]}
# W002 warns that the endpoint admits anonymous callers with DEBUG off: the
# demo is open on purpose (offline model, 127.0.0.1). A real project sets
# PERMISSION_CLASSES (docs/howto/authenticate.md) instead of silencing it.
SILENCED_SYSTEM_CHECKS = ["toolnexus_django.W002"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "toolnexus_django": {
            "handlers": ["console"],
            "level": os.environ.get("TOOLNEXUS_LOG_LEVEL", "INFO"),
        },
    },
}
