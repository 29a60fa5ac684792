"""Every problem the system checks report, one id each, and the one helper
that makes their messages.

Ids are grouped by the module that raises them: E1xx the ``TOOLNEXUS`` dict
and its top-level keys (:mod:`.toplevel`), E2xx ``STORE`` and ``EVENT_LISTENER`` (:mod:`.store`),
E3xx ``AGENT`` / ``TOOLKIT`` / ``CLIENT`` (:mod:`.agent`), E4xx the numbers
(:mod:`.limits`), E5xx ``REVIEW``, E6xx ``PUSH``, E7xx ``MCP``, E8xx ``GRPC``,
E90x ``TRACING``, E95x ``METRICS``. The ids from before that already named one
problem kept their number. docs/reference/checks.md (generated from this module) lists them all; a
test holds the two (and each id's one raise) together.
"""

from __future__ import annotations

from django.core.checks import CheckMessage, Error, Warning

PREFIX = "toolnexus_django."

#: id -> the one problem it names.
PROBLEMS: dict[str, str] = {
    # toplevel.py: the dict and its top-level keys
    "E100": "TOOLNEXUS is not a dict",
    "E101": "TOOLNEXUS has an unknown key",
    "E003": '"rest_framework" is not in INSTALLED_APPS',
    "E008": "TASK_BACKEND names no backend of settings.TASKS",
    "E110": "AUTHENTICATION_CLASSES is not a list (or None)",
    "E111": "an AUTHENTICATION_CLASSES entry does not import",
    "E112": "PERMISSION_CLASSES is not a list (or None)",
    "E113": "a PERMISSION_CLASSES entry does not import",
    "E120": "ANSWERERS is not a dict",
    "E121": "an ANSWERERS entry does not say who may answer",
    "E122": "TOOL_ANSWERERS is not a dict",
    "E123": "a TOOL_ANSWERERS entry does not say who may answer",
    "E130": "EXTENDED_AGENT_CARD is not a callable, a dotted path or None",
    "E131": "EXTENDED_AGENT_CARD's dotted path does not import",
    "E132": "CARD_SIGNING_KEY cannot be used (not an EC P-256 private key)",
    "E140": "CONVERSATIONS is none of the accepted forms",
    "E141": "CONVERSATIONS's dotted path does not import",
    "W003": "a retired key is set (it has no effect)",
    "W101": "a key that moved (into a section, or within one) is set (still honoured for now)",
    "W102": "SILENCED_SYSTEM_CHECKS names a retired id (it silences nothing)",
    # store.py
    "E201": "STORE is none of the accepted forms",
    "E202": "STORE's dotted path does not import",
    "E203": 'STORE "file:<dir>": no directory, or it cannot be created or written',
    "E204": 'STORE "django:<alias>": the alias is not in DATABASES',
    "E205": "STORE's class could not be made (its constructor raised)",
    "E206": "EVENT_LISTENER is not None, False, an alias of a PostgreSQL database or a DSN",
    "W207": "EVENT_LISTENER's database looks like a connection pooler (it may drop LISTEN)",
    # agent.py
    "E301": "AGENT is not a dict",
    "E302": "AGENT has an unknown key",
    "E303": 'AGENT["skills"] is not a list of names (or None)',
    "E311": "TOOLKIT is not a dict or a dotted path",
    "E312": "TOOLKIT has an unknown key",
    "E313": "TOOLKIT's dotted path (a factory) does not import",
    "E314": 'TOOLKIT["skills_dir"] is not a path or a list of paths',
    "E004": 'a TOOLKIT["skills_dir"] directory is missing or unreadable',
    "E315": 'TOOLKIT["tools"] is not a list',
    "E316": 'a TOOLKIT["tools"] entry does not import',
    "E321": "CLIENT is not a dict or a dotted path",
    "E322": "CLIENT has an unknown key",
    "E323": "CLIENT's dotted path (a factory) does not import",
    "E005": 'CLIENT["style"] is not "openai" or "anthropic"',
    "W001": "CLIENT has no base_url or model: every run will fail",
    "W004": "CLIENT has no api_key and none is in the environment: every run will fail",
    # limits.py: one per number
    "E401": "MAX_RUNS is not a whole number >= 1",
    "E402": "DATABASE_THREADS is not a whole number >= 1",
    "E403": "TOOL_THREADS is not a whole number >= 1",
    "E404": "MAX_ATTEMPTS is not a whole number >= 1",
    "E405": "MAX_HELD_REQUESTS is not a whole number >= 1 (or None)",
    "E406": "MAX_OUTPUT_CHARS is not a whole number >= 1",
    "E407": "MAX_HISTORY_MESSAGES is not a whole number >= 1",
    "E408": "MAX_MEMORY_MESSAGES is not a whole number >= 1",
    "E409": "MAX_MODEL_RESPONSE_BYTES is not a whole number >= 1",
    "E410": "MAX_HEADER_BYTES is not a whole number >= 1024",
    "E411": "STREAM_CHUNK_CHARS is not a whole number >= 1",
    "E420": "RUN_TIMEOUT is not a number of seconds > 0 (or None)",
    "E421": "LEASE_SECONDS is not a number of seconds > 0",
    "E422": "REQUEUE_AFTER is not a number of seconds > 0",
    "E423": "BLOCKING_TIMEOUT is not a number of seconds > 0",
    "E424": "STREAM_MAX_SECONDS is not a number of seconds > 0",
    "E425": "STREAM_HEARTBEAT is not a number of seconds > 0",
    "E426": "EVENT_POLL_INTERVAL is not a number of seconds > 0",
    "E428": "EVENT_FALLBACK_POLL_INTERVAL is not a number of seconds > 0",
    "E427": "READ_TIMEOUT is not a number of seconds > 0",
    "E430": "IDEMPOTENCY_WINDOW is not a number of seconds >= 0 (or None)",
    "E431": "EXPIRY_SWEEP_INTERVAL is not a number of seconds >= 0",
    "E432": "GRACE_SECONDS is not a number of seconds >= 0",
    "E433": "CREDENTIAL_CACHE_SECONDS is not a number of seconds >= 0",
    "E434": "STREAM_CHUNK_SECONDS is not a number of seconds >= 0",
    "E435": "STREAM_LIVE_UPDATES is not True or False",
    # review.py
    "E500": "REVIEW is not a dict",
    "E501": "REVIEW has an unknown key",
    "E502": 'REVIEW["HOLD_SECONDS"] is not a number of seconds > 0',
    "E503": 'REVIEW["APPROVALS"] is not a dict of tool name -> whole number >= 1',
    "E504": 'REVIEW["EDIT_ARGUMENTS"] is not True or False',
    "E505": 'REVIEW["ALLOW_SELF_APPROVAL"] is not True or False',
    "E506": 'REVIEW["REMIND_BEFORE"] is not a number of seconds > 0 (or None)',
    "E507": 'REVIEW["ESCALATE_AFTER"] is not a number of seconds > 0 (or None)',
    "E508": 'REVIEW["REMIND_EMAILS"] is not a list of e-mail addresses (or None)',
    "E509": 'REVIEW["ESCALATE_EMAILS"] is not a list of e-mail addresses',
    "E510": 'REVIEW["EXPIRY_LOG_USER"] is not a username (or None)',
    "E511": 'REVIEW["NOTIFY_EMAILS"] is not a list of e-mail addresses',
    "E512": 'REVIEW["BASE_URL"] is not an absolute http(s) URL (or None)',
    "E012": 'REVIEW["ESCALATE_AFTER"] is set without REMIND_BEFORE: none would be sent',
    "W011": 'REVIEW["ALLOW_SELF_APPROVAL"] is on: no segregation of duties',
    # push.py
    "E600": "PUSH is not a dict",
    "E601": "PUSH has an unknown key",
    "E602": 'PUSH["ALLOWED_HOSTS"] is not a list of host names',
    "E603": 'a PUSH["ALLOWED_HOSTS"] entry is no host name, address or .suffix',
    "E604": 'PUSH["TIMEOUT"] is not a number of seconds > 0',
    "E605": 'PUSH["RETRY_DELAY"] is not a number of seconds > 0',
    "E606": 'PUSH["MAX_RETRY_DELAY"] is not a number of seconds > 0',
    "E607": 'PUSH["MAX_ATTEMPTS"] is not a whole number >= 1',
    "E608": 'PUSH["THREADS"] is not a whole number >= 1',
    "E609": 'PUSH["SIGNING_KEY"] cannot be used (not an EC P-256 private key)',
    "W030": 'a PUSH["ALLOWED_HOSTS"] entry names a metadata service: it stays refused',
    # mcp.py
    "E700": "MCP is not a dict",
    "E701": "MCP has an unknown key",
    "E702": 'MCP["tools"] is not None, "__all__" or a list of tool names',
    "E703": 'MCP["name"] is not a string (or None)',
    "E704": 'MCP["version"] is not a string (or None)',
    "E705": 'MCP["AUTHENTICATION_CLASSES"] is not a list (or None)',
    "E706": 'an MCP["AUTHENTICATION_CLASSES"] entry does not import',
    "E707": 'MCP["PERMISSION_CLASSES"] is not a list (or None)',
    "E708": 'an MCP["PERMISSION_CLASSES"] entry does not import',
    "E709": 'MCP["MAX_REQUEST_BYTES"] is not a whole number >= 1',
    "E710": 'MCP["MAX_CONCURRENT_CALLS"] is not a whole number >= 1',
    "E711": 'MCP["CALL_TIMEOUT"] is not a number of seconds > 0 (or None)',
    "E712": 'MCP["AUDIT"] is not True or False',
    "E021": 'MCP["tools"] names a tool the toolkit does not have',
    "W020": 'MCP["tools"] could not be checked: the toolkit did not build',
    # grpc.py
    "E800": "GRPC is not a dict",
    "E801": "GRPC has an unknown key",
    "E802": 'GRPC["ADDRESS"] is not "host:port" (or None)',
    "E803": 'GRPC["URL"] is not a string (or None)',
    "E804": 'GRPC["ADDRESS"] is set but grpcio or the a2a-sdk is not installed',
    "W800": 'GRPC["ADDRESS"] listens on every interface and no URL says where clients dial',
    # metrics.py
    "E950": "METRICS is not a dict (or None)",
    "E951": "METRICS has an unknown key",
    "E952": "METRICS admits nobody (neither TOKEN nor PERMISSION is set)",
    "E953": 'METRICS["TOKEN"] is not a non-empty string (or None)',
    "E954": 'METRICS["PERMISSION"] is not "app_label.codename" (or None)',
    "E955": "METRICS is set but prometheus_client is not installed",
    # observability.py: TRACING
    "E900": "TRACING is not True or False",
    "E901": "TRACING is on but opentelemetry-api is not installed",
    # security.py
    "W002": "the endpoint admits anonymous callers and DEBUG is off",
}

#: Ids that named several problems, retired (never raised, never reused) ->
#: the ids of those problems now. SILENCED_SYSTEM_CHECKS naming one warns (W102).
RETIRED_IDS: dict[str, tuple[str, ...]] = {
    "E001": ("E100", "E101", "E302", "E312", "E322", "E501", "E601", "E701"),
    "E002": ("E201", "E202", "E203", "E204", "E205"),
    "E006": (
        *("E110", "E112", "E120", "E121", "E122", "E123", "E130", "E140"),
        *("E301", "E303", "E311", "E314", "E315", "E321", "E600", "E602", "E603", "E609"),
    ),
    "E007": ("E111", "E113", "E131", "E141", "E313", "E316", "E323", "E706", "E708"),
    "E009": (
        *("E401", "E402", "E403", "E404", "E405", "E406", "E407", "E408", "E409", "E410"),
        *("E420", "E421", "E422", "E423", "E424", "E425", "E426", "E427", "E430", "E431"),
        *("E604", "E605", "E606", "E607", "E608"),
    ),
    "E010": ("E511", "E512"),
    "E011": ("E500", "E502", "E503", "E504", "E505", "E506", "E507", "E508", "E509", "E510"),
    "E020": (*("E700", "E702", "E703", "E704", "E705", "E707", "E709", "E710", "E711", "E712"),),
}


def problem(code: str, msg: str, hint: str | None = None) -> CheckMessage:
    """The message of problem ``code`` (``"E401"``): an ``Error`` for an E
    id, a ``Warning`` for a W id, its id ``toolnexus_django.<code>``."""
    if code not in PROBLEMS:
        raise KeyError(f"{code} is not in PROBLEMS: give each problem its id there")
    level = Error if code.startswith("E") else Warning
    return level(msg, hint=hint, id=PREFIX + code)
