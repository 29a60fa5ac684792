"""The ``TOOLNEXUS`` dict's own keys: which are known, retired or moved, and
the top-level settings that are no section of their own (the DRF classes,
the Tasks backend, who answers, the extended card, the card's signing key,
conversations)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage

from ..conf import DEFAULTS, MOVED, RETIRED, setting_name, written
from ..keys import load_key
from ..lifecycle.requests import normalize_answerers
from .problems import PREFIX, RETIRED_IDS, problem
from .sections import check_class_list, importable

#: The ids of the DRF class lists: (not a list, an entry that does not import).
CLASS_LISTS = {"AUTHENTICATION_CLASSES": ("E110", "E111"), "PERMISSION_CLASSES": ("E112", "E113")}
#: The ids of the answerer maps: (not a dict, an entry that says nobody).
ANSWERER_MAPS = {"ANSWERERS": ("E120", "E121"), "TOOL_ANSWERERS": ("E122", "E123")}
#: CONVERSATIONS values that are no dotted path.
CONVERSATION_FORMS = (None, "auto", "django", "memory")


def check_top_level(raw: dict[str, Any], cfg: dict[str, Any]) -> list[CheckMessage]:
    """``raw`` as written, ``cfg`` merged over the defaults."""
    errors = check_keys(raw) + check_moved(raw)
    errors += check_task_backend(cfg["TASK_BACKEND"])
    errors += check_answerers(cfg)
    for key, (not_list, unimportable) in CLASS_LISTS.items():
        errors += check_class_list(cfg[key], not_list, unimportable, key)
    errors += check_extended_card(cfg["EXTENDED_AGENT_CARD"])
    errors += check_card_key(cfg["CARD_SIGNING_KEY"])
    errors += check_conversations(cfg["CONVERSATIONS"])
    if not apps.is_installed("rest_framework"):
        errors.append(
            problem(
                "E003",
                '"rest_framework" is not in INSTALLED_APPS',
                hint="The endpoint is built on Django REST framework: add it to INSTALLED_APPS.",
            )
        )
    return errors


def check_keys(raw: dict[str, Any]) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for key in raw:
        if key in RETIRED:
            errors.append(
                problem(
                    "W003",
                    f"{setting_name(key)} has no effect: {RETIRED[key]}",
                    hint=f"Remove {key!r} from {setting_name()}.",
                )
            )
        elif key not in DEFAULTS and (key,) not in MOVED:
            errors.append(
                problem(
                    "E101",
                    f"{setting_name()} has an unknown key {key!r}",
                    hint=f"Known keys: {', '.join(DEFAULTS)}.",
                )
            )
    return errors


def check_moved(raw: dict[str, Any]) -> list[CheckMessage]:
    """A key that moved (a top-level key, or one within a section) is set."""
    return [
        problem(
            "W101",
            f"{setting_name(*old)} moved to {setting_name(*new)}: it is still read for now,"
            " unless that is set too",
            hint=f"Write it as {setting_name(*new)}.",
        )
        for old, new in MOVED.items()
        if written(raw, old)[0]
    ]


def check_silenced() -> list[CheckMessage]:
    """A retired id in SILENCED_SYSTEM_CHECKS silences nothing any more."""
    errors: list[CheckMessage] = []
    for silenced in getattr(settings, "SILENCED_SYSTEM_CHECKS", ()):
        old = str(silenced).removeprefix(PREFIX)
        if str(silenced).startswith(PREFIX) and old in RETIRED_IDS:
            errors.append(
                problem(
                    "W102",
                    f"SILENCED_SYSTEM_CHECKS names {silenced}, which is retired: it silences"
                    " nothing (each problem it named has an id of its own now)",
                    hint="Silence the ids it became, those that apply: "
                    + ", ".join(PREFIX + new for new in RETIRED_IDS[old])
                    + ".",
                )
            )
    return errors


def check_task_backend(alias: Any) -> list[CheckMessage]:
    if alias is None:
        return []
    tasks = getattr(settings, "TASKS", None) or {}
    if alias in tasks:
        return []
    return [
        problem(
            "E008",
            f"{setting_name('TASK_BACKEND')} = {alias!r} is not a backend in settings.TASKS",
            hint="Use None for the built-in in-process backend, or an alias of settings.TASKS.",
        )
    ]


def check_answerers(cfg: dict[str, Any]) -> list[CheckMessage]:
    """ANSWERERS / TOOL_ANSWERERS: dicts of name -> "reviewer" | "requester" | a list of them."""
    errors: list[CheckMessage] = []
    for key, (not_dict, nobody) in ANSWERER_MAPS.items():
        value = cfg[key]
        if not isinstance(value, dict):
            errors.append(problem(not_dict, f"{setting_name(key)} must be a dict"))
            continue
        for name, who in value.items():
            if not isinstance(name, str) or normalize_answerers(who) is None:
                errors.append(
                    problem(
                        nobody,
                        f"{setting_name(key)}[{name!r}] = {who!r} does not say who may answer",
                        hint='Use "reviewer", "requester", or ["requester", "reviewer"].',
                    )
                )
    return errors


def check_extended_card(value: Any) -> list[CheckMessage]:
    if isinstance(value, str):
        return importable("E131", value, "EXTENDED_AGENT_CARD")
    if value is None or callable(value):
        return []
    return [
        problem(
            "E130",
            f"{setting_name('EXTENDED_AGENT_CARD')} must be a callable (request, card) -> card,"
            " its dotted path, or None",
        )
    ]


def check_card_key(value: Any) -> list[CheckMessage]:
    """A card key of its own that loads (None: the push key's; False: none)."""
    if value is None or value is False:
        return []
    try:
        load_key(str(value))
    except (OSError, ValueError, TypeError) as exc:
        return [
            problem(
                "E132",
                f"{setting_name('CARD_SIGNING_KEY')} cannot be used: {exc}",
                hint="Give an EC P-256 private key in PEM or a PEM file's path"
                " (None: PUSH's SIGNING_KEY; False: cards are not signed).",
            )
        ]
    return []


def check_conversations(value: Any) -> list[CheckMessage]:
    if value in CONVERSATION_FORMS:
        return []
    if isinstance(value, str):
        return importable("E141", value, "CONVERSATIONS")
    if hasattr(value, "get") and hasattr(value, "save"):
        return []
    return [
        problem(
            "E140",
            f'{setting_name("CONVERSATIONS")} must be "auto", "django", "memory", None,'
            " or a toolnexus ConversationStore (or a dotted path to one)",
        )
    ]
