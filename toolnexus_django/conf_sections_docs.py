"""What each key of the ``REVIEW``, ``PUSH``, ``MCP`` and ``GRPC`` sections of
``TOOLNEXUS`` means: :data:`toolnexus_django.conf_docs.DOCS`'s larger sections,
kept here to keep each module short. Text is MyST Markdown.
"""

from __future__ import annotations

#: dotted key -> what it means (Markdown).
SECTION_DOCS: dict[str, str] = {
    'REVIEW': (
        "Human review: `NOTIFY_EMAILS`, the addresses e-mailed (Django's mail framework) when a "
        'Task starts waiting on a person (empty = no mail); `BASE_URL`, the absolute `http(s)://` '
        'base of the review link in that e-mail, e.g. `"https://ops.example.com"` (`None` = a '
        "site-relative link). A team of reviewers: how long a reviewer's hold lasts, approvals "
        'needed per tool (four eyes), whether a reviewer may edit a call, reminders and '
        "escalations before expiry, whether a reviewer may answer their own Task's approval. "
        'Merged key by key with the default. See the how-to on review at team scale.'
    ),
    'REVIEW.NOTIFY_EMAILS': (
        "The addresses e-mailed (Django's mail framework) when a Task starts waiting on a person; "
        'empty = no mail. Was the top-level `REVIEW_NOTIFY_EMAILS` (still read, W101).'
    ),
    'REVIEW.BASE_URL': (
        'The absolute `http(s)://` base of the review link in that e-mail, e.g. '
        '`"https://ops.example.com"`; `None` = a site-relative link. Was the top-level '
        '`REVIEW_BASE_URL` (still read, W101).'
    ),
    'REVIEW.HOLD_SECONDS': (
        "A reviewer's hold on a Task lapses after this many seconds. Was `CLAIM_SECONDS` (still "
        'read, W101).'
    ),
    'REVIEW.APPROVALS': (
        '`{tool name: approvals needed}`; `2` = four eyes (two different reviewers approve before '
        'the run resumes). Tools not named need one.'
    ),
    'REVIEW.EDIT_ARGUMENTS': (
        "Reviewers may change a halted tool call's arguments (validated against the tool's input "
        'schema) when they approve it.'
    ),
    'REVIEW.REMIND_BEFORE': (
        'Seconds before a Request expires that a reminder goes to `REMIND_EMAILS`; `None` = no '
        'reminder.'
    ),
    'REVIEW.REMIND_EMAILS': 'Who gets the reminder; `None` = `NOTIFY_EMAILS`.',
    'REVIEW.ESCALATE_AFTER': (
        'Seconds after the reminder that an escalation goes to `ESCALATE_EMAILS`; `None` = no '
        'escalation. Reminder and escalation also send a signal (`review_reminder`, '
        '`review_escalation`), once, however many processes sweep.'
    ),
    'REVIEW.ESCALATE_EMAILS': 'Who gets the escalation.',
    'REVIEW.EXPIRY_LOG_USER': (
        'The username an expired Request is logged as in the admin log (a `LogEntry` needs a '
        'user); `None` = expiries are not logged there.'
    ),
    'REVIEW.ALLOW_SELF_APPROVAL': (
        'A reviewer may answer a Request of their own Task that only a reviewer may answer (an '
        'approval they asked for). Off: segregation of duties; on, `manage.py check` warns '
        '(W011).'
    ),
    'PUSH': (
        'Push notifications: hosts a webhook may be on though they resolve to non-public '
        'addresses; seconds per call; failures in a row before a config is disabled; the first '
        "retry's delay and the longest; delivering threads per process; an EC P-256 key (PEM or "
        'path) to sign notifications (and the Agent Cards, unless `CARD_SIGNING_KEY` says '
        "otherwise), and the JWT's issuer. See the webhooks how-to."
    ),
    'PUSH.ALLOWED_HOSTS': (
        'Hosts a webhook may be on although they resolve to loopback or private addresses (names, '
        '`".suffix"`, or IPs). Metadata services stay refused (W030).'
    ),
    'PUSH.TIMEOUT': 'Seconds per delivery call.',
    'PUSH.MAX_ATTEMPTS': 'Consecutive failures before a push config is disabled.',
    'PUSH.RETRY_DELAY': (
        "The first retry's delay, in seconds; it doubles up to `MAX_RETRY_DELAY`."
    ),
    'PUSH.MAX_RETRY_DELAY': 'The longest delay between retries, in seconds.',
    'PUSH.THREADS': 'Delivering threads per process.',
    'PUSH.SIGNING_KEY': (
        "An EC P-256 private key (PEM, or a PEM file's path): notifications are then signed (an "
        'ES256 JWT; keys at `<prefix>/.well-known/jwks.json`); it also signs the Agent Cards '
        'unless `CARD_SIGNING_KEY` says otherwise.'
    ),
    'PUSH.ISSUER': 'The signed notifications\' `"iss"`; `None` = the AGENT name.',
    'MCP': (
        'The toolkit as an MCP server at `<prefix>/mcp`: `tools` `None` = off, `"__all__"` or a '
        "list of tool names; its DRF classes (`None` = the endpoint's), limits and audit. Merged "
        'key by key with the default. See the MCP how-to.'
    ),
    'MCP.tools': (
        '`None` = off (no endpoint: 404); `"__all__"` = every tool of the toolkit; or a list of '
        'tool names, as toolnexus names them.'
    ),
    'MCP.name': "What `initialize` reports as the server's name; `None` = AGENT's name.",
    'MCP.version': (
        "What `initialize` reports as the server's version; `None` = AGENT's version."
    ),
    'MCP.AUTHENTICATION_CLASSES': (
        "DRF authentication classes for the MCP endpoint; `None` = the A2A endpoint's own. An "
        'unauthenticated call gets 401 with `WWW-Authenticate`.'
    ),
    'MCP.PERMISSION_CLASSES': (
        "DRF permission classes for the MCP endpoint; `None` = the A2A endpoint's own."
    ),
    'MCP.MAX_REQUEST_BYTES': 'The largest request body (413 past it).',
    'MCP.CALL_TIMEOUT': (
        'Seconds one `tools/call` may run (then an `isError` result); `None` = no bound.'
    ),
    'MCP.MAX_CONCURRENT_CALLS': (
        '`tools/call`s one process runs at once; past it, an `isError` result "busy" at once.'
    ),
    'MCP.AUDIT': (
        'Store every `tools/call` as a row (the admin\'s "MCP calls"); the `mcp_called` signal is '
        'sent either way.'
    ),
    'GRPC': (
        'The gRPC binding (the `grpc` extra): every `toolnexus_serve` worker serves it on '
        '`ADDRESS` (`"host:port"`; `None` = off); the card\'s `GRPC` interface names `URL` (`None` '
        '= `ADDRESS`). See the wire reference (gRPC).'
    ),
    'GRPC.ADDRESS': (
        '`"host:port"` every `toolnexus_serve` worker serves the gRPC binding on (the `grpc` '
        'extra); `None` = off.'
    ),
    'GRPC.URL': (
        "The address the card's gRPC interface names; `None` = `ADDRESS` (set it when `ADDRESS` "
        'is `0.0.0.0`, W800).'
    ),
}
