"""What each key of ``TOOLNEXUS`` means, for the settings reference.

``conf.DEFAULTS`` holds the keys and their defaults; this holds their meaning, one entry per
top-level key and per key of a dict section (``"REVIEW.HOLD_SECONDS"``). The docs site's
settings page is generated from the two (docs/_ext/toolnexus_reference.py), and a test fails
when a key of ``DEFAULTS`` has no entry here, or an entry names no key. Text is MyST Markdown.
"""

from __future__ import annotations

from .conf_sections_docs import SECTION_DOCS

#: dotted key -> what it means (Markdown).
DOCS: dict[str, str] = {
    'STORE': (
        'Where Tasks live. `None` / `"memory"` → `InMemoryTaskStore` (process lifetime only); '
        '`"file:<dir>"` → `FileTaskStore(<dir>)`; `"django"` → `DjangoTaskStore()`; '
        '`"django:<alias>"` → `DjangoTaskStore(using=<alias>)`; a `TaskStore` instance (used '
        'as-is) or subclass (instantiated with no arguments); or a dotted path to either.'
    ),
    'AGENT': (
        'The Agent Card. `provider` is a dict (e.g. `{"organization": ..., "url": ...}`) or '
        '`None`. `skills` lists the skill names to publish; `None` = every `SKILL.md` skill of '
        'the toolkit; an agent with no `SKILL.md` skills publishes one skill describing itself '
        '(its name and description), so clients that offer one tool per skill, such as '
        "toolnexus's `agent()`, can still call it. The card never lists raw tools."
    ),
    'AGENT.name': (
        "The agent's name on the Agent Card (and MCP's and push JWTs' default name and issuer)."
    ),
    'AGENT.description': "The Agent Card's description.",
    'AGENT.version': "The Agent Card's version (and MCP's default version).",
    'AGENT.provider': (
        'The card\'s provider: a dict (e.g. `{"organization": ..., "url": ...}`) or `None`.'
    ),
    'AGENT.skills': (
        "The names of the toolkit's `SKILL.md` skills the card publishes; `None` = every one. An "
        'agent with no `SKILL.md` skills publishes one skill describing itself (its name and '
        "description), so clients that offer one tool per skill, such as toolnexus's `agent()`, "
        'can still call it. The card never lists raw tools.'
    ),
    'TOOLKIT': (
        'A dict of `toolnexus.create_toolkit()` options — `skills_dir` (path or list of paths), '
        "`mcp_config` (path or dict), `builtins` (toolnexus's built-in tools), `tools` (dotted "
        'paths of native toolnexus tools offered on every turn); other keys go to '
        '`create_toolkit` as-is — **or** a dotted path to a factory `() -> Toolkit` (sync or '
        'async).'
    ),
    'TOOLKIT.skills_dir': (
        'A directory (or a list of directories) of `SKILL.md` skills; `None` = none.'
    ),
    'TOOLKIT.mcp_config': (
        'MCP servers whose tools the toolkit offers: a path to an MCP config file or the config '
        'as a dict; `None` = none.'
    ),
    'TOOLKIT.builtins': (
        "Whether toolnexus's built-in tools are offered (off by default here)."
    ),
    'TOOLKIT.tools': (
        'Dotted paths of native toolnexus tools offered on every turn (your tools, e.g. '
        '`"expenses.tools.file_expense"`). Any other TOOLKIT key goes to '
        '`toolnexus.create_toolkit()` as it is.'
    ),
    'CLIENT': (
        'A dict of `toolnexus.create_client()` options — `base_url`, `style` (`"openai"` or '
        '`"anthropic"`), `model`, `api_key`, and any other `create_client` keyword (`timeout_ms`, '
        '`retries`, `max_turns`, `system_prompt`, …); `None` values are dropped — **or** a dotted '
        'path to a factory `() -> Client`: `"toolnexus_django.offline.client"`, the shipped '
        'deterministic offline model (no LLM: for development, tests and demos), or one of '
        'yours (e.g. returning `toolnexus.create_in_process_client(...)`).'
    ),
    'CLIENT.base_url': "The model endpoint's base URL (an OpenAI- or Anthropic-style API).",
    'CLIENT.style': '`"openai"` or `"anthropic"`: which API the model endpoint speaks.',
    'CLIENT.model': (
        "The model's name. Any other `create_client` keyword (`timeout_ms`, `retries`, "
        '`max_turns`, `system_prompt`, ...) may sit beside it; `None` values are dropped.'
    ),
    'CLIENT.api_key': (
        "The model endpoint's API key; `None` = the one in the environment (`OPENROUTER_API_KEY`, "
        '`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`); none at all: check W004.'
    ),
    'AUTHENTICATION_CLASSES': (
        'DRF authentication classes (dotted paths) for the JSON-RPC endpoint; `None` = '
        '`REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]`. The authenticated user becomes the '
        "Task's owner; another caller's Task answers -32001 as if unknown."
    ),
    'PERMISSION_CLASSES': (
        'DRF permission classes for the endpoint; `None` = '
        '`REST_FRAMEWORK["DEFAULT_PERMISSION_CLASSES"]`. A refused request keeps DRF\'s HTTP '
        '401 (with its `WWW-Authenticate` challenge), 403 or 429 and gets the binding\'s own '
        'error: a JSON-RPC error object (-31401, -31403, -31429), a `google.rpc.Status` over '
        'HTTP+JSON, `UNAUTHENTICATED` / `PERMISSION_DENIED` over gRPC.'
    ),
    'TASK_BACKEND': (
        'Which Django Tasks backend runs fulfilment and resumes. `None` = in this process, as '
        'coroutines; otherwise an alias of `settings.TASKS`.'
    ),
    'IDEMPOTENCY_WINDOW': (
        'Seconds a `messageId` is remembered per owner: a send that repeats one within it returns '
        'the Task it started (same id, no second Task or run). `None` = for ever, `0` = every '
        'send makes a Task. See the wire reference (repeated sends).'
    ),
    'MAX_RUNS': (
        'Runs (first runs and resumes) in flight at once per process. A run waiting on its model '
        'holds no thread and no database connection; a run past the bound waits its turn as '
        '`submitted` and starts when a slot frees — never refused, never enqueued twice. The IO '
        'pool toolnexus makes its model calls on is sized to match.'
    ),
    'DATABASE_THREADS': (
        'Default `16`, and `4` when the default database is SQLite. Threads (so database '
        'connections, kept open) per process for the short database work of the ASGI endpoint and '
        "of the runs: the app's part of the process's connection budget (see the production "
        'how-to, database connections). SQLite takes one writer at a time: more threads there '
        'only queue on its lock, at a cost in CPU.'
    ),
    'TOOL_THREADS': (
        "Threads per process for tool calls' database work (a sync tool's body, an async tool's "
        'ORM queries, what a tool hands to `asyncio.to_thread`): one per call, taken when the '
        'call first needs it, handed back when the call returns — so at most this many tool calls '
        'use the database at once, and tools hold at most this many connections. More calls wait '
        'for a thread, never fail; async calls that never touch the database never wait. See the '
        'production how-to (database connections).'
    ),
    'READ_TIMEOUT': (
        "Seconds a client has to send a request's headers, and again its whole body after them, "
        'on every path `toolnexus_serve` serves (the admin and your views too; under another ASGI '
        "server, the lean endpoint's body only); a slower or idle client is disconnected (a late "
        'body: 408 first).'
    ),
    'CREDENTIAL_CACHE_SECONDS': (
        "Seconds a process remembers a caller's `Authorization` header that DRF's own "
        '`BasicAuthentication` or `TokenAuthentication` verified, so a polling peer costs no '
        'token query and no password hash per request (`0`: never). The bound on revocation: a '
        'deleted token, a changed password, a deactivated user is refused everywhere at most this '
        'long after the change, and at once by the process that made it. Wrong credentials and '
        'sessions are never remembered. See the authentication how-to.'
    ),
    'MAX_HEADER_BYTES': (
        "The most bytes of a request's line and headers under `toolnexus_serve`, counted as they "
        'arrive (an unfinished header counts): past it 431 Request Header Fields Too Large and '
        'the connection is closed. At least 1024 (`E410`).'
    ),
    'RUN_TIMEOUT': (
        'Upper bound in seconds on one run; a longer run ends `failed`. `None` = only the '
        "client's own `timeout_ms`."
    ),
    'EXPIRY_SWEEP_INTERVAL': (
        'Seconds between sweeps in each `toolnexus_serve` worker: expired Requests answered, dead '
        "workers' Tasks recovered. `0` = no in-process sweep (run `manage.py toolnexus_sweep`)."
    ),
    'GRACE_SECONDS': (
        "Seconds a stopping process (a `toolnexus_serve` worker, any ASGI server's lifespan "
        'shutdown) gives its in-flight requests and running Tasks; a run still going after it is '
        'handed back to be run again. `toolnexus_serve --grace` overrides it.'
    ),
    'LEASE_SECONDS': (
        "How long a worker's claim on a running Task lasts; renewed every third of it while the "
        'run is alive.'
    ),
    'MAX_ATTEMPTS': (
        'Runs started per run segment — the first run, or the resume of one answer — before an '
        'interrupted one ends `failed` ("The run was interrupted: …"); a run that stops cleanly '
        'for a person starts a new segment.'
    ),
    'REQUEUE_AFTER': (
        'A `submitted` Task not taken after this many seconds is enqueued again (its enqueue may '
        'have been lost).'
    ),
    'CONVERSATIONS': (
        'Conversation memory per `contextId`: `"auto"` (database with the django store, else '
        'in-process), `"django"`, `"memory"`, `None` (no memory), or a toolnexus '
        '`ConversationStore` (instance or dotted path).'
    ),
    'BLOCKING_TIMEOUT': (
        'Seconds a blocking send (v0.3 `blocking`, v1.0 `returnImmediately: false`) waits before '
        'returning the Task as it is.'
    ),
    'STREAM_MAX_SECONDS': 'Longest life of one SSE stream; the client may resubscribe.',
    'STREAM_HEARTBEAT': 'Seconds between `: keep-alive` comments on a quiet stream.',
    'STREAM_LIVE_UPDATES': (
        'A Task sent by a streaming method (`message/stream`, `SendStreamingMessage`, '
        '`message:stream`) runs through the model\'s streaming API, and its streams show the '
        'answer as it is written (`TaskArtifactUpdateEvent` chunks) and each tool call (`working` '
        'status updates). `False`: the model answers whole, and streams show the moves only.'
    ),
    'STREAM_CHUNK_SECONDS': (
        'A streamed Task shows its answer as the model writes it: at most one chunk '
        '(`TaskArtifactUpdateEvent`, `append: true`) per Task every this many seconds; `0` sends '
        'one per model delta. The first chunk goes at once.'
    ),
    'STREAM_CHUNK_CHARS': (
        'A chunk goes before `STREAM_CHUNK_SECONDS` have passed once this many characters wait.'
    ),
    'EVENT_POLL_INTERVAL': (
        "Seconds between a process's looks at the event log for moves made by other processes "
        '(one query per process, however many blocking sends and streams wait); moves in the same '
        'process wake them at once.'
    ),
    'EVENT_LISTENER': (
        'Wake-ups by PostgreSQL `LISTEN`/`NOTIFY` (the django store on PostgreSQL): every move '
        'notifies, and one connection per process (`application_name` `toolnexus-listener`, '
        'outside `DATABASE_THREADS`; open while anything waits) listens and wakes the waiters at '
        "once. `None` = the store's own database alias; an alias of `DATABASES`; a libpq DSN "
        '(`"host=db.internal port=5432 dbname=app"`, `"postgresql://..."`); `False` = poll only. '
        'It must reach PostgreSQL directly: a pooler in transaction mode (PgBouncer) silently '
        'drops `LISTEN` (check W207 warns where that can be seen; a probe after `LISTEN` finds '
        'it at run time, logs one warning, and the process polls). SQLite, memory and file '
        'stores always poll. See the production how-to (wake-ups).'
    ),
    'EVENT_FALLBACK_POLL_INTERVAL': (
        "Seconds between a process's looks at the event log while its listener is connected "
        '(`EVENT_POLL_INTERVAL` while it is not): a safety net for a wake-up a notification '
        'missed. After the listener (re)connects, one look at once catches up with what moved '
        'while it was away.'
    ),
    'MAX_HELD_REQUESTS': (
        '**WSGI views only** (the ASGI endpoint and `toolnexus_serve` have no such bound: a '
        'waiting request there holds no thread). Open streams plus blocking sends one WSGI '
        'process holds at once (each holds a server thread). Past it streams are refused (-32603, '
        '`data.reason: "TOO_MANY_HELD_REQUESTS"`) and blocking sends return at once. `None` = no '
        'bound.'
    ),
    'ANSWERERS': (
        'Who may answer a pending Request, by its kind (`"*"`: any other kind): `"reviewer"` (the '
        'admin, or code acting for a user with the `answer_task` permission), `"requester"` (the '
        "Task's owner, by an A2A message carrying the taskId), or a list of both. Merged key by "
        'key with the default. See the trust model.'
    ),
    'ANSWERERS.approval': 'Who may answer an approval Request: by default a reviewer only.',
    'ANSWERERS.authorization': (
        'Who may answer an authorization Request: by default a reviewer only.'
    ),
    'ANSWERERS.*': (
        'Who may answer a Request of any other kind: by default the requester or a reviewer.'
    ),
    'TOOL_ANSWERERS': (
        'The same per tool name, for the Requests that tool makes (e.g. `{"ask_requester": '
        '"requester"}`); wins over `ANSWERERS` and over a Request\'s own `data["answerers"]`.'
    ),
    'MAX_OUTPUT_CHARS': (
        "The longest text a Task stores: a run's final text, a prompt, and each message of a "
        'stored transcript. Longer text is cut, with `[output truncated: N characters, the first '
        'M are kept]` at the end; the Task still completes.'
    ),
    'MAX_HISTORY_MESSAGES': 'A Task keeps its last N `history` messages.',
    'MAX_MEMORY_MESSAGES': (
        'A conversation remembers its system prompt and its last N model messages, from a user '
        'turn on.'
    ),
    'MAX_MODEL_RESPONSE_BYTES': (
        "The most bytes read from one model answer, and from the body of a model's HTTP error, "
        'with a dict `CLIENT` (the default transport): past it the run ends `failed` ("The '
        'model\'s answer was larger than N bytes") without reading the rest. Several times the '
        'JSON of the longest answers models give (128k output tokens is about 0.5 MB of text). A '
        '`CLIENT["http_transport"]` of your own, or a factory client, reads the body itself: '
        'bound it there. The default transport keeps its HTTP/1.1 connections to the model open '
        'between calls (at most 16 idle per host); a proxy named by the environment, or a '
        'redirect, goes through urllib as before.'
    ),
    'EXTENDED_AGENT_CARD': (
        'The extended Agent Card for authenticated callers: a callable `(request, card) -> card` '
        '(or its dotted path) given the public card; `None` = none. Announced on the public card '
        'when the endpoint has authentication classes. See the wire reference (the Agent Card).'
    ),
    'CARD_SIGNING_KEY': (
        'Signs the public and the extended Agent Card (their `signatures`, ES256 over the RFC '
        '8785 canonical card): an EC P-256 private key (PEM or path); `None` = '
        '`PUSH["SIGNING_KEY"]` when that is set; `False` = cards are not signed. Its public key '
        'joins the JWKS at `<prefix>/.well-known/jwks.json`. See the wire reference (the Agent '
        'Card).'
    ),
    'SECURITY_SCHEMES': (
        "The Agent Card's security schemes: `None` = derived from the endpoint's authentication "
        'classes (the wire reference, the Agent Card); or a dict `{name: scheme}` in the A2A v0.3 '
        '/ OpenAPI form, which replaces them (`{}` declares none).'
    ),
    'TRACING': (
        "`True`: each A2A and MCP request, run, model call, tool call, push delivery and "
        "reviewer's decision is an OpenTelemetry span (the GenAI and A2A conventions), sent to "
        "the global tracer provider the project configures; needs the `otel` extra (E901). "
        '`False` (the default): OpenTelemetry is never imported. See the observability how-to.'
    ),
    'METRICS': (
        'Prometheus metrics at `<prefix>/metrics` (the `metrics` extra). `None` = off: the '
        'URL does not exist. A dict admits `{"TOKEN": "<secret>"}` callers sending '
        '`Authorization: Bearer <secret>` and/or `{"PERMISSION": "app.codename"}` logged-in '
        'users with it; anyone else gets 404. See the observability how-to.'
    ),
    **SECTION_DOCS,
}
