"""System checks for the ``TOOLNEXUS`` setting.

Misconfiguration is reported by ``manage.py check`` (and before every
management command) with stable ids, never as a traceback at request time:

=======================  =====================================================
toolnexus_django.E001    TOOLNEXUS is not a dict, or it (or AGENT/TOOLKIT/CLIENT) has an unknown key
toolnexus_django.E002    STORE is none of the accepted forms
toolnexus_django.E003    "rest_framework" is missing from INSTALLED_APPS
toolnexus_django.E004    TOOLKIT["skills_dir"] is missing or unreadable
toolnexus_django.E005    CLIENT["style"] is not "openai" or "anthropic"
toolnexus_django.E006    AGENT / TOOLKIT / CLIENT / ANSWERERS has the wrong type
toolnexus_django.E007    a dotted path (factory, tool, DRF class) does not import
toolnexus_django.E008    TASK_BACKEND names no backend in settings.TASKS
toolnexus_django.E009    a number setting (threads, attempts, seconds) is out of range
toolnexus_django.E010    REVIEW_NOTIFY_EMAILS / REVIEW_BASE_URL malformed
toolnexus_django.E011    a REVIEW value has the wrong type or range (review_checks)
toolnexus_django.E012    REVIEW ESCALATE_AFTER without REMIND_BEFORE (review_checks)
toolnexus_django.W001    CLIENT has no base_url or model: runs will fail
toolnexus_django.W002    the endpoint admits anonymous callers, DEBUG off
toolnexus_django.W003    a retired key is set (it has no effect)
toolnexus_django.W004    CLIENT has no api_key and none is in the environment: runs will fail
=======================  =====================================================
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.utils.module_loading import import_string

from .conf import DEFAULTS, RETIRED, SETTING_NAME, known_keys, merge

CLIENT_STYLES = ("openai", "anthropic")
#: Where toolnexus's client looks for a key when CLIENT's api_key is empty.
API_KEY_ENV = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def _id(n: str) -> str:
    return f"toolnexus_django.{n}"


def _importable(path: Any, where: str) -> list[CheckMessage]:
    if not isinstance(path, str):
        return []
    try:
        import_string(path)
    except ImportError as e:
        return [
            Error(
                f"{SETTING_NAME}{where} = {path!r} cannot be imported: {e}",
                hint="Give the full dotted path to a module-level object.",
                id=_id("E007"),
            )
        ]
    return []


@register(Tags.compatibility)
def check_settings(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    raw = getattr(settings, SETTING_NAME, {})
    if not isinstance(raw, dict):
        return [Error(f"{SETTING_NAME} must be a dict, not {type(raw).__name__}", id=_id("E001"))]
    errors: list[CheckMessage] = []
    for key in raw:
        if key in RETIRED:
            errors.append(
                Warning(
                    f"{SETTING_NAME}[{key!r}] has no effect: {RETIRED[key]}",
                    hint=f"Remove {key!r} from {SETTING_NAME}.",
                    id=_id("W003"),
                )
            )
        elif key not in DEFAULTS:
            errors.append(
                Error(
                    f"{SETTING_NAME} has an unknown key {key!r}",
                    hint=f"Known keys: {', '.join(DEFAULTS)}.",
                    id=_id("E001"),
                )
            )
    cfg = merge(raw)
    errors += _check_store(cfg["STORE"])
    errors += _check_sections(cfg)
    errors += _check_section_keys(raw)
    errors += _check_numbers(cfg)
    errors += _check_task_backend(cfg["TASK_BACKEND"])
    errors += _check_review(cfg)
    errors += _check_answerers(cfg)
    for key in ("AUTHENTICATION_CLASSES", "PERMISSION_CLASSES"):
        value = cfg[key]
        if value is not None and not isinstance(value, (list, tuple)):
            errors.append(Error(f"{SETTING_NAME}[{key!r}] must be a list", id=_id("E006")))
            continue
        for i, path in enumerate(value or ()):
            errors += _importable(path, f"[{key!r}][{i}]")
    if not apps.is_installed("rest_framework"):
        errors.append(
            Error(
                '"rest_framework" is not in INSTALLED_APPS',
                hint="The endpoint is built on Django REST framework: add it to INSTALLED_APPS.",
                id=_id("E003"),
            )
        )
    return errors


def _check_store(store: Any) -> list[CheckMessage]:
    from .stores import InvalidStoreError, TaskStore, resolve_store

    if isinstance(store, str) and store.startswith("file:"):
        directory = store[len("file:") :]
        problem = _directory_problem(directory) if directory else "no directory given"
        if problem is None:
            return []
        return [
            Error(
                f"{SETTING_NAME}['STORE'] = {store!r}: the directory cannot be created ({problem})",
                hint='Use "file:<dir>" with a directory this process can create or write to.',
                id=_id("E002"),
            )
        ]
    if isinstance(store, str) and store.startswith("django:"):
        alias = store[len("django:") :]
        if alias and alias not in settings.DATABASES:
            return [
                Error(
                    f"{SETTING_NAME}['STORE'] = {store!r}: {alias!r} is not in settings.DATABASES",
                    hint=f"Known aliases: {', '.join(settings.DATABASES)}.",
                    id=_id("E002"),
                )
            ]
    if store is None or isinstance(store, TaskStore) or store in ("memory", "django"):
        return []
    try:
        resolve_store(store)
    except InvalidStoreError as e:
        return [Error(f"{SETTING_NAME}['STORE']: {e}", id=_id("E002"))]
    except Exception as e:  # a custom store whose constructor fails
        return [Error(f"{SETTING_NAME}['STORE'] = {store!r} failed to build: {e}", id=_id("E002"))]
    return []


def _directory_problem(directory: str) -> str | None:
    """Why FileTaskStore(directory) could not create / write its directory, or
    None. Creates nothing: walks up to the nearest existing ancestor."""
    path = os.path.abspath(directory)
    if os.path.exists(path):
        if not os.path.isdir(path):
            return "it exists and is not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return "it is not writable"
        return None
    ancestor = os.path.dirname(path)
    while not os.path.exists(ancestor) and os.path.dirname(ancestor) != ancestor:
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        return f"{ancestor} is not a directory"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{ancestor} is not writable"
    return None


def _check_section_keys(raw: dict[str, Any]) -> list[CheckMessage]:
    """A typo inside AGENT / TOOLKIT / CLIENT ("skils") is an unknown key too."""
    errors: list[CheckMessage] = []
    for section in ("AGENT", "TOOLKIT", "CLIENT"):
        value = raw.get(section)
        if not isinstance(value, dict):
            continue
        known = known_keys(section)
        for key in value:
            if key not in known:
                errors.append(
                    Error(
                        f"{SETTING_NAME}[{section!r}] has an unknown key {key!r}",
                        hint=f"Known keys: {', '.join(known)}.",
                        id=_id("E001"),
                    )
                )
    return errors


def _check_sections(cfg: dict[str, Any]) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    agent = cfg["AGENT"]
    if not isinstance(agent, dict):
        errors.append(Error(f"{SETTING_NAME}['AGENT'] must be a dict", id=_id("E006")))
    elif agent.get("skills") is not None and not isinstance(agent["skills"], (list, tuple)):
        errors.append(
            Error(f"{SETTING_NAME}['AGENT']['skills'] must be a list of names", id=_id("E006"))
        )

    toolkit = cfg["TOOLKIT"]
    if isinstance(toolkit, str):
        errors += _importable(toolkit, "['TOOLKIT']")
    elif not isinstance(toolkit, dict):
        errors.append(
            Error(f"{SETTING_NAME}['TOOLKIT'] must be a dict or a dotted path", id=_id("E006"))
        )
    else:
        errors += _check_skills_dir(toolkit.get("skills_dir"))
        tools = toolkit.get("tools")
        if tools is not None and not isinstance(tools, (list, tuple)):
            errors.append(
                Error(
                    f"{SETTING_NAME}['TOOLKIT']['tools'] must be a list of dotted paths",
                    id=_id("E006"),
                )
            )
            tools = None
        for i, path in enumerate(tools or ()):
            errors += _importable(path, f"['TOOLKIT']['tools'][{i}]")

    client = cfg["CLIENT"]
    if isinstance(client, str):
        errors += _importable(client, "['CLIENT']")
    elif not isinstance(client, dict):
        errors.append(
            Error(f"{SETTING_NAME}['CLIENT'] must be a dict or a dotted path", id=_id("E006"))
        )
    else:
        style = client.get("style") or "openai"
        if style not in CLIENT_STYLES:
            errors.append(
                Error(
                    f"{SETTING_NAME}['CLIENT']['style'] = {style!r} is not a known client style",
                    hint=f"Use one of {', '.join(CLIENT_STYLES)}.",
                    id=_id("E005"),
                )
            )
        if not client.get("base_url") or not client.get("model"):
            errors.append(
                Warning(
                    f"{SETTING_NAME}['CLIENT'] has no base_url or model: every run will fail",
                    hint="Set CLIENT base_url and model, or a dotted path to a client factory.",
                    id=_id("W001"),
                )
            )
        elif not client.get("api_key") and not any(os.environ.get(k) for k in API_KEY_ENV):
            # A warning, not an error: migrate, createsuperuser and the rest
            # must run before the key is there (the pasted Install reads it
            # from the environment, default "").
            errors.append(
                Warning(
                    f"{SETTING_NAME}['CLIENT'] has no api_key and none of"
                    f" {' / '.join(API_KEY_ENV)} is set: every run will fail",
                    hint="Set OPENAI_API_KEY (any value for a local server that needs none).",
                    id=_id("W004"),
                )
            )
    return errors


def _check_skills_dir(value: Any) -> list[CheckMessage]:
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        dirs = [value]
    elif isinstance(value, (list, tuple)) and all(isinstance(d, (str, os.PathLike)) for d in value):
        dirs = list(value)
    else:
        return [
            Error(
                f"{SETTING_NAME}['TOOLKIT']['skills_dir'] must be a path or a list of paths",
                id=_id("E006"),
            )
        ]
    errors: list[CheckMessage] = []
    for d in dirs:
        path = os.fspath(d)
        if not os.path.isdir(path) or not os.access(path, os.R_OK | os.X_OK):
            errors.append(
                Error(
                    f"{SETTING_NAME}['TOOLKIT']['skills_dir']: {path!r}"
                    " is not a readable directory",
                    id=_id("E004"),
                )
            )
    return errors


#: Settings that must be whole numbers >= 1 (None allowed where marked).
_WHOLE = {
    "MAX_ATTEMPTS": False,
    "MAX_HELD_REQUESTS": True,
    "MAX_OUTPUT_CHARS": False,
    "MAX_HISTORY_MESSAGES": False,
    "MAX_MEMORY_MESSAGES": False,
    "MAX_MODEL_RESPONSE_BYTES": False,
    "DATABASE_THREADS": False,
    "TOOL_THREADS": False,
    "MAX_RUNS": False,
}
#: Settings that must be numbers of seconds > 0 (None allowed where marked).
_SECONDS = {
    "RUN_TIMEOUT": True,
    "LEASE_SECONDS": False,
    "REQUEUE_AFTER": False,
    "BLOCKING_TIMEOUT": False,
    "STREAM_MAX_SECONDS": False,
    "STREAM_HEARTBEAT": False,
    "EVENT_POLL_INTERVAL": False,
    "READ_TIMEOUT": False,
}
#: Settings that must be numbers of seconds >= 0 (None allowed).
_SECONDS_OR_ZERO = {"IDEMPOTENCY_WINDOW"}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_numbers(cfg: dict[str, Any]) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for key, nullable in _WHOLE.items():
        value = cfg[key]
        if (value is None and nullable) or (
            isinstance(value, int) and _is_number(value) and value >= 1
        ):
            continue
        errors.append(Error(f"{SETTING_NAME}[{key!r}] must be an integer >= 1", id=_id("E009")))
    for key, nullable in _SECONDS.items():
        value = cfg[key]
        if (value is None and nullable) or (_is_number(value) and value > 0):
            continue
        errors.append(
            Error(f"{SETTING_NAME}[{key!r}] must be a positive number of seconds", id=_id("E009"))
        )
    for key in _SECONDS_OR_ZERO:
        value = cfg[key]
        if value is not None and not (_is_number(value) and value >= 0):
            errors.append(
                Error(f"{SETTING_NAME}[{key!r}] must be seconds >= 0, or None", id=_id("E009"))
            )
    extended = cfg["EXTENDED_AGENT_CARD"]
    if isinstance(extended, str):
        errors += _importable(extended, "['EXTENDED_AGENT_CARD']")
    elif extended is not None and not callable(extended):
        errors.append(
            Error(
                f"{SETTING_NAME}['EXTENDED_AGENT_CARD'] must be a callable (request, card) "
                "-> card, its dotted path, or None",
                id=_id("E006"),
            )
        )
    conversations = cfg["CONVERSATIONS"]
    if conversations not in (None, "auto", "django", "memory"):
        if isinstance(conversations, str):
            errors += _importable(conversations, "['CONVERSATIONS']")
        elif not (hasattr(conversations, "get") and hasattr(conversations, "save")):
            errors.append(
                Error(
                    f'{SETTING_NAME}[\'CONVERSATIONS\'] must be "auto", "django", "memory", '
                    "None, or a toolnexus ConversationStore (or a dotted path to one)",
                    id=_id("E006"),
                )
            )
    return errors


def _check_review(cfg: dict[str, Any]) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    emails = cfg["REVIEW_NOTIFY_EMAILS"]
    if not isinstance(emails, (list, tuple)) or not all(
        isinstance(e, str) and "@" in e for e in emails
    ):
        errors.append(
            Error(
                f"{SETTING_NAME}['REVIEW_NOTIFY_EMAILS'] must be a list of e-mail addresses",
                id=_id("E010"),
            )
        )
    base = cfg["REVIEW_BASE_URL"]
    if base is not None and not (
        isinstance(base, str) and base.startswith(("http://", "https://"))
    ):
        errors.append(
            Error(
                f"{SETTING_NAME}['REVIEW_BASE_URL'] must be an absolute http(s) URL",
                hint='For example "https://ops.example.com" (the review links start with it).',
                id=_id("E010"),
            )
        )
    interval = cfg["EXPIRY_SWEEP_INTERVAL"]
    if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval < 0:
        errors.append(
            Error(
                f"{SETTING_NAME}['EXPIRY_SWEEP_INTERVAL'] must be a number of seconds >= 0",
                id=_id("E009"),
            )
        )
    return errors


def _check_answerers(cfg: dict[str, Any]) -> list[CheckMessage]:
    """ANSWERERS / TOOL_ANSWERERS: dicts of name -> "reviewer" | "requester" | a list of them."""
    from .lifecycle.requests import normalize_answerers

    errors: list[CheckMessage] = []
    for key in ("ANSWERERS", "TOOL_ANSWERERS"):
        value = cfg[key]
        if not isinstance(value, dict):
            errors.append(Error(f"{SETTING_NAME}[{key!r}] must be a dict", id=_id("E006")))
            continue
        for name, who in value.items():
            if not isinstance(name, str) or normalize_answerers(who) is None:
                errors.append(
                    Error(
                        f"{SETTING_NAME}[{key!r}][{name!r}] = {who!r} does not say who may answer",
                        hint='Use "reviewer", "requester", or ["requester", "reviewer"].',
                        id=_id("E006"),
                    )
                )
    return errors


def _check_task_backend(alias: Any) -> list[CheckMessage]:
    if alias is None:
        return []
    tasks = getattr(settings, "TASKS", None) or {}
    if alias not in tasks:
        return [
            Error(
                f"{SETTING_NAME}['TASK_BACKEND'] = {alias!r} is not a backend in settings.TASKS",
                hint="Use None for the built-in in-process backend, or an alias of settings.TASKS.",
                id=_id("E008"),
            )
        ]
    return []


# The endpoint's security check lives beside these (imported: it registers).
from .security_checks import check_endpoint_not_open  # noqa: E402,F401
